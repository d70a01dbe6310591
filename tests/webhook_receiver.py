"""What the webhook tests send to: a real HTTPS receiver on 127.0.0.1 with a self-signed certificate the sender is
told to trust, a fake resolver (names the test gives, nothing else: no DNS query leaves the machine), and a guard
that refuses any connection but to loopback before it is opened."""

import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from shared.domain.outbound import IPAddress
from tests.certificates import self_signed_certificate

RECEIVER_NAME = "receiver.quire.test"


def receiver_certificate(directory: Path) -> tuple[Path, Path]:
    """The HTTPS receivers' certificate (RECEIVER_NAME and 127.0.0.1) and key."""
    return self_signed_certificate(directory, RECEIVER_NAME, addresses=["127.0.0.1"], stem="receiver")


class FakeResolver:
    """Fake for the sender's resolver port: answers only the names a test set; any other name fails as an unknown
    host would, without a query leaving the machine."""

    def __init__(self) -> None:
        self.names: dict[str, list[IPAddress]] = {}
        self.asked: list[str] = []

    def set(self, name: str, *addresses: str) -> None:
        self.names[name] = [ipaddress.ip_address(address) for address in addresses]

    def __call__(self, host: str, port: int) -> list[IPAddress]:
        self.asked.append(host)
        if host in self.names:
            return list(self.names[host])
        raise socket.gaierror(socket.EAI_NONAME, f"{host} is not a name this test resolves")


class LoopbackOnlyConnector:
    """The sender's connector in tests: opens connections to loopback only; any other address is refused before a
    packet is sent, and recorded (a test asserts none was tried)."""

    def __init__(self) -> None:
        self.refused: list[tuple[str, int]] = []

    def __call__(self, address: tuple[str, int], timeout: float) -> socket.socket:
        if not ipaddress.ip_address(address[0]).is_loopback:
            self.refused.append(address)
            raise ConnectionRefusedError(f"the test guard refused a connection to {address[0]}")
        return socket.create_connection(address, timeout=timeout)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A receiver: records every request; answers `status` (a test may change it, or set `redirect_to`)."""

    port: int
    # https by RECEIVER_NAME (the fake resolver's name for 127.0.0.1), or plain http to 127.0.0.1 (loopback only).
    tls: bool = True
    received: list[Received] = field(default_factory=list)
    status: int = 200
    redirect_to: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def url(self, path: str = "/hook") -> str:
        if self.tls:
            return f"https://{RECEIVER_NAME}:{self.port}{path}"
        return f"http://127.0.0.1:{self.port}{path}"

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.received) >= count, timeout=timeout)
            return list(self.received)

    def of_type(self, event_type: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.json().get("type") == event_type]


@contextmanager
def https_receiver(cert_file: Path, key_file: Path) -> Iterator[Receiver]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    with _receiver(context) as receiver:
        yield receiver


@contextmanager
def http_receiver() -> Iterator[Receiver]:
    """Plain http on 127.0.0.1, which the local rules allow (to loopback only)."""
    with _receiver(None) as receiver:
        yield receiver


@contextmanager
def _receiver(context: ssl.SSLContext | None) -> Iterator[Receiver]:
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with receiver.lock:
                receiver.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status, redirect = receiver.status, receiver.redirect_to
            with receiver.arrived:
                receiver.arrived.notify_all()
            self.send_response(302 if redirect else status)
            if redirect:
                self.send_header("Location", redirect)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    receiver = Receiver(port=server.server_address[1], tls=context is not None)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
