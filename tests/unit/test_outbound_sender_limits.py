"""The webhook sender's bounds against a hostile endpoint (issue 34; found by the review): the whole exchange cut at
its timeout even when the answer drips, no more than 64 KiB of the answer read (headers included), a name that cannot
be written as a domain refused by a rule, and a refusal that never says what a name resolves to. Every server here
listens on 127.0.0.1."""

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from shared.adapters.outbound_http import PinnedHttpSender
from shared.domain.outbound import OutboundRefused
from tests.webhook_receiver import FakeResolver


@contextmanager
def raw_server(answer: Callable[[socket.socket], None]) -> Iterator[tuple[int, threading.Event]]:
    """A TCP server on 127.0.0.1 that reads the request and then runs `answer` on the socket; the event is set when
    `answer` finished writing everything. It then waits for the client to close (no reset of unread bytes)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    finished = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            data = b""
            while b"\r\n\r\n" not in data or len(data.split(b"\r\n\r\n", 1)[1]) < len(b"{}"):
                chunk = connection.recv(65536)
                if not chunk:
                    return
                data += chunk
            try:
                answer(connection)
                finished.set()
                connection.settimeout(30)
                while connection.recv(65536):
                    pass
            except OSError:
                return  # the client gave up: the drip did not finish

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], finished
    finally:
        listener.close()
        thread.join(timeout=30)


DRIPPED: list[int] = []  # bytes of the drip written so far (the test reads it when the send returns)


def drip_headers(connection: socket.socket) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\n")
    for _ in range(40):  # 40 bytes, one every 0.1 s: 4 s in all, each recv() served well within its own timeout
        connection.sendall(b"X")
        DRIPPED.append(1)
        time.sleep(0.1)
    connection.sendall(b"-Drip: 1\r\nContent-Length: 0\r\n\r\n")


def drip_body(connection: socket.socket) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\nConnection: close\r\n\r\n")
    for _ in range(40):
        connection.sendall(b"x")
        DRIPPED.append(1)
        time.sleep(0.1)


@pytest.mark.parametrize("answer", [drip_headers, drip_body], ids=["headers", "body"])
def test_a_slow_drip_answer_is_cut_at_the_senders_timeout(answer: Callable[[socket.socket], None]) -> None:
    """docs/events.md: 'the whole exchange is cut at 10 s'. Here the cut is 0.5 s and the server drips its answer
    over 4 s: the send must return before the server finished dripping."""
    DRIPPED.clear()
    with raw_server(answer) as (port, _finished):
        sender = PinnedHttpSender(allow_loopback=True, resolve=FakeResolver(), timeout_seconds=0.5)
        started = time.monotonic()
        outcome = sender.send(f"http://127.0.0.1:{port}/hook", {"webhook-id": "m"}, b"{}")
        took = time.monotonic() - started
        dripped = len(DRIPPED)
        print(f"send returned {outcome!r} after {took:.2f} s (cut at 0.5 s); {dripped} of 40 drips (0.1 s each) read")
        assert dripped < 40, f"the sender waited out the whole 4 s drip ({took:.2f} s) despite a 0.5 s cut"


def huge_headers(connection: socket.socket) -> None:
    connection.sendall(b"HTTP/1.1 200 OK\r\n")
    for index in range(90):  # 90 headers of 60 KiB: 5.4 MB before the body
        connection.sendall(f"X-Pad-{index}: ".encode() + b"a" * 60_000 + b"\r\n")
    connection.sendall(b"Content-Length: 0\r\n\r\n")


def test_no_more_than_64_kib_of_the_answer_is_read() -> None:
    """docs/events.md: 'at most 64 KiB of the answer is read'. An answer whose headers alone are 5.4 MB can only be
    parsed (and the delivery counted) by reading all of them."""
    with raw_server(huge_headers) as (port, finished):
        sender = PinnedHttpSender(allow_loopback=True, resolve=FakeResolver(), timeout_seconds=10)
        outcome = sender.send(f"http://127.0.0.1:{port}/hook", {"webhook-id": "m"}, b"{}")
        print(f"outcome {outcome!r}; the server wrote all 5.4 MB: {finished.is_set()}")
        assert not outcome.delivered, "5.4 MB of headers were read and the delivery counted as a 200"


def test_a_name_idna_cannot_encode_is_refused_by_a_rule_not_raised() -> None:
    """Refused before any resolver is asked (a 400 at registration, a recorded outcome at delivery, never a 500)."""
    host = "\u00fc" * 80 + ".example"
    resolver = FakeResolver()
    sender = PinnedHttpSender(allow_loopback=False, resolve=resolver)
    with pytest.raises(OutboundRefused) as refused:
        sender.check_destination(f"https://{host}/hook")
    assert refused.value.rule == "malformed"
    outcome = sender.send(f"https://{host}/hook", {"webhook-id": "m"}, b"{}")
    assert outcome.refused_rule == "malformed" and resolver.asked == []


def test_a_refusal_at_registration_does_not_tell_the_private_address_a_name_resolves_to() -> None:
    """On AWS the API resolves the name with the VPC's resolver (private hosted zones, the database's endpoint...):
    the 400 hands a collection admin the private address, a DNS oracle for the inside of the deployment."""
    resolver = FakeResolver()
    resolver.set("db.internal.example", "10.20.30.40")
    sender = PinnedHttpSender(allow_loopback=False, resolve=resolver)
    with pytest.raises(OutboundRefused) as refused:
        sender.check_destination("https://db.internal.example/hook")
    print(f"the refusal says: {refused.value}")
    assert "10.20.30.40" not in str(refused.value)
