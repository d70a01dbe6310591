"""Webhooks' pure rules and the sender's refusals (issue 34): backoff, the retry window, rotation overlap, the
registration's checks, what an event shows, and every hostile destination refused before a connection is opened."""

import socket
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from shared.adapters.outbound_http import PinnedHttpSender
from shared.domain.errors import InvalidRequest
from shared.domain.events import EventCursor, EventType, StoredEvent, event_body
from shared.domain.webhooks import (
    FIRST_RETRY,
    LONGEST_WAIT,
    RETRY_WINDOW,
    WebhookRecord,
    WebhookRequest,
    WebhookState,
    checked_registration,
    next_attempt,
    should_disable,
)
from tests.webhook_receiver import FakeResolver

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("jitter", [0.0, 0.5, 0.999])
def test_backoff_doubles_from_5_s_to_an_hour_with_jitter_in_the_upper_half(jitter: float) -> None:
    for attempts in range(1, 40):
        at = next_attempt(NOW, attempts, NOW, jitter=lambda: jitter)
        assert at is not None
        step = min(FIRST_RETRY * 2 ** (attempts - 1), LONGEST_WAIT)
        assert step / 2 <= at - NOW <= step


def test_retries_stop_at_the_end_of_the_window_and_never_run_past_it() -> None:
    almost = NOW + RETRY_WINDOW - timedelta(seconds=10)
    assert next_attempt(NOW, 30, almost, jitter=lambda: 1.0) == NOW + RETRY_WINDOW
    assert next_attempt(NOW, 30, NOW + RETRY_WINDOW, jitter=lambda: 0.0) is None
    assert not should_disable(None, NOW)
    assert not should_disable(NOW, NOW + timedelta(days=3) - timedelta(seconds=1))
    assert should_disable(NOW, NOW + timedelta(days=3))


def webhook(previous_expires: datetime | None) -> WebhookRecord:
    return WebhookRecord(
        tenant_id="t",
        webhook_id=uuid4(),
        url="https://example.test/",
        event_types=["*"],
        collection_ids=["docs"],
        description="",
        state=WebhookState.ACTIVE,
        disabled_reason=None,
        failing_since=None,
        secret="whsec_new",
        previous_secret="whsec_old" if previous_expires else None,
        previous_secret_expires_at=previous_expires,
        created_by="ann",
        created_at=NOW,
    )


def test_a_rotated_out_secret_signs_only_until_its_overlap_ends() -> None:
    rotated = webhook(NOW + timedelta(hours=24))
    assert rotated.signing_secrets(NOW) == ["whsec_new", "whsec_old"]
    assert rotated.signing_secrets(NOW + timedelta(hours=24)) == ["whsec_new"]
    assert webhook(None).signing_secrets(NOW) == ["whsec_new"]
    assert rotated.wants("file.deleted", "docs") and not rotated.wants("file.deleted", "legal")


@pytest.mark.parametrize(
    ("request_", "word"),
    [
        (WebhookRequest(url="http://example.test/", events=["*"], collection_ids=["docs"]), "'scheme'"),
        (WebhookRequest(url="https://example.test/", events=["file.nope"], collection_ids=["docs"]), "unknown"),
        (WebhookRequest(url="https://example.test/", events=[], collection_ids=["docs"]), "events"),
        (WebhookRequest(url="https://example.test/", events=["*"], collection_ids=["../x"]), "collection id"),
        (
            WebhookRequest(url="https://example.test/", events=["*"], collection_ids=["d"], description="a\x00b"),
            "control",
        ),
        (WebhookRequest(url="https://example.test/" + "a" * 2100, events=["*"], collection_ids=["d"]), "2048"),
    ],
)
def test_registration_refusals_name_the_field_and_the_rule(request_: WebhookRequest, word: str) -> None:
    with pytest.raises(InvalidRequest, match=word):
        checked_registration(request_, allow_loopback=False)


def test_registration_dedupes_and_sorts_its_lists() -> None:
    checked = checked_registration(
        WebhookRequest(
            url="https://example.test/h", events=["file.deleted", "*", "file.deleted"], collection_ids=["b", "a", "b"]
        ),
        allow_loopback=False,
    )
    assert checked.events == ["*", "file.deleted"] and checked.collection_ids == ["a", "b"]


def test_an_event_shows_ids_state_and_the_failures_sentence_nothing_else() -> None:
    event = StoredEvent(
        tenant_id="t",
        event_id=uuid4(),
        seq=1,
        type=EventType.FILE_VERSION_FAILED,
        collection_id="docs",
        ordering_key="f",
        data={"fileId": "f", "versionId": "v", "attempt": 1, "failureReason": "encrypted"},
        occurred_at=NOW,
    )
    body = event_body(event)
    assert set(body) == {"eventId", "type", "occurredAt", "tenantId", "collectionId", "data"}
    assert body["data"]["failureSentence"].startswith("The document is password-protected")
    assert EventCursor.parse(None) == 0 and EventCursor.parse("42") == 42
    for forged in ("-1", "1e3", "abc", "9" * 21, "\uff11\uff12"):  # the last: fullwidth digits, which isdigit() accepts
        with pytest.raises(ValueError, match="cursor"):
            EventCursor.parse(forged)


class NoConnections:
    """Fake for the sender's connector: any connection is a failure of the test (the rules must refuse first)."""

    def __init__(self) -> None:
        self.tried: list[tuple[str, int]] = []

    def __call__(self, address: tuple[str, int], timeout: float) -> socket.socket:
        self.tried.append(address)
        raise AssertionError(f"a connection to {address} was opened")


HOSTILE = {
    # literal addresses and their other spellings
    "https://10.0.0.1/": "private",
    "https://172.16.5.4/": "private",
    "https://192.168.1.1/": "private",
    "https://100.64.0.1/": "private",
    "https://127.0.0.1/": "loopback",
    "https://169.254.169.254/latest/meta-data/": "metadata",
    "https://169.254.10.10/": "link-local",
    "https://[fd00:ec2::254]/": "metadata",
    "https://[::1]/": "loopback",
    "https://[fe80::1]/": "link-local",
    "https://[::ffff:127.0.0.1]/": "loopback",
    "https://[::ffff:169.254.169.254]/": "metadata",
    "https://[64:ff9b::a00:1]/": "private",
    "https://[2002:a9fe:a9fe::]/": "metadata",
    "https://0.0.0.0/": "unspecified",
    "https://224.0.0.1/": "multicast",
    "https://2130706433/": "numeric-host",
    "https://0x7f000001/": "numeric-host",
    "https://0177.0.0.1/": "numeric-host",
    "https://127.1/": "numeric-host",
    "https://localhost/": "loopback",
    "http://example.test/": "scheme",
    "https://user:secret@example.test/": "credentials",
    # names, resolved by the fake resolver
    "https://internal.quire.test/": "private",
    "https://metadata.quire.test/": "metadata",
    "https://mixed.quire.test/": "private",
    "https://mapped.quire.test/": "metadata",
    "https://nowhere.quire.test/": "unresolvable",
}


def test_every_hostile_destination_is_refused_naming_its_rule_before_any_connection() -> None:
    resolver = FakeResolver()
    resolver.set("internal.quire.test", "10.1.2.3")
    resolver.set("metadata.quire.test", "169.254.169.254")
    resolver.set("mixed.quire.test", "93.184.216.34", "192.168.0.10")  # one public, one private: refused
    resolver.set("mapped.quire.test", "::ffff:169.254.169.254")
    connector = NoConnections()
    sender = PinnedHttpSender(allow_loopback=False, resolve=resolver, connect=connector)
    for url, rule in HOSTILE.items():
        outcome = sender.send(url, {}, b"{}")
        assert not outcome.delivered and outcome.refused_rule == rule, (url, outcome)
        assert f"'{rule}'" in (outcome.error or "")
    assert connector.tried == []


def test_a_name_that_resolves_public_then_private_is_refused_when_it_turns() -> None:
    resolver = FakeResolver()
    resolver.set("rebinding.quire.test", "93.184.216.34")
    sender = PinnedHttpSender(allow_loopback=False, resolve=resolver, connect=NoConnections())
    sender.check_destination("https://rebinding.quire.test/hook")  # registration: public, accepted
    resolver.set("rebinding.quire.test", "10.9.8.7")
    outcome = sender.send("https://rebinding.quire.test/hook", {}, b"{}")
    assert outcome.refused_rule == "private" and "10.9.8.7" not in (outcome.error or "")  # never says where


def test_on_aws_only_port_443_is_sent_to() -> None:
    sender = PinnedHttpSender(
        allow_loopback=False, resolve=FakeResolver(), connect=NoConnections(), allowed_ports=frozenset({443})
    )
    outcome = sender.send("https://example.test:8443/hook", {}, b"{}")
    assert outcome.refused_rule == "port" and "8443" in (outcome.error or "")
    with pytest.raises(InvalidRequest, match="'port'"):
        checked_registration(
            WebhookRequest(url="https://example.test:8080/", events=["*"], collection_ids=["docs"]),
            allow_loopback=False,
            allowed_ports=frozenset({443}),
        )


def test_an_address_that_cannot_be_reached_gives_way_to_the_next_one_the_name_has() -> None:
    """A name with an IPv6 address first, on a network without IPv6: the IPv4 address is tried next."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Answer(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.handle_request, daemon=True).start()
    tried: list[str] = []

    def connect(address: tuple[str, int], timeout: float) -> socket.socket:
        tried.append(address[0])
        if address[0] == "::1":
            raise OSError(101, "Network is unreachable")
        return socket.create_connection(address, timeout=timeout)

    resolver = FakeResolver()
    resolver.set("localhost", "::1", "127.0.0.1")
    sender = PinnedHttpSender(allow_loopback=True, resolve=resolver, connect=connect)
    outcome = sender.send(f"http://localhost:{server.server_address[1]}/hook", {}, b"{}")
    server.server_close()
    assert outcome.delivered and outcome.status == 204 and tried == ["::1", "127.0.0.1"]
