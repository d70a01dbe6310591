"""A webhook receiver on 127.0.0.1 (plain http: the local rules allow it to loopback only) that records every
request it gets and answers each with `status`."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    status: int = 204
    received: list[Received] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)


@contextmanager
def webhook_receiver(status: int = 204) -> Iterator[Receiver]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    receiver = Receiver(url=f"http://127.0.0.1:{server.server_address[1]}/hooks/quire", status=status)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            receiver.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(receiver.status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            receiver.arrived.set()

        def log_message(self, format: str, *args: object) -> None:
            return None

    server.RequestHandlerClass = Handler
    thread = threading.Thread(target=server.serve_forever, name="webhook-receiver", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
