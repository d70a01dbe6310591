"""`quire webhooks ...` and `quire events` (issue 34) against the session's API: a webhook's whole life with a real
HTTPS receiver on 127.0.0.1 (add, ls, test, deliveries, rotate, replay, enable, rm), and the event feed read up to a
cursor and followed. The commands run in this process (`cli.main`) through the real HTTP API; only where the stack is
found is pointed at the session's (the formatting and usage errors: tests/unit/test_cli_events.py)."""

import json
import time
import uuid
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import standardwebhooks

from shared import cli
from shared.cli import events as events_cli
from tests.integration.files_stack import Stack
from tests.webhook_receiver import Receiver, https_receiver

Run = Callable[..., tuple[int, str, str]]
DOC = b"# Harbour plan\n\nThe harbour project starts in March.\n"


@pytest.fixture
def receiver(stack: Stack) -> Iterator[Receiver]:
    assert stack.receiver_certificate is not None
    with https_receiver(*stack.receiver_certificate) as running:
        yield running


@pytest.fixture
def token(stack: Stack) -> str:
    """Every role in `docs`, for a tenant of this test's own."""
    return stack.token(tenant=f"e{uuid.uuid4().hex[:10]}")


@pytest.fixture
def run(stack: Stack, token: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    monkeypatch.setattr("shared.local.stack.running_state", lambda paths: {"api": stack.api})

    def quire(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        status = cli.main([*argv, "--collections", "docs", "--token", token])
        out, err = capsys.readouterr()
        return status, out, err

    return quire


def wait_until(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while (value := check()) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def test_a_webhook_is_added_listed_tested_rotated_replayed_and_removed(run: Run, receiver: Receiver) -> None:
    status, out, err = run("webhooks", "add", receiver.url(), "--description", "ready files")
    assert status == 0, err
    header, row, secret_line, once = out.splitlines()
    assert header.split()[:3] == ["webhook", "state", "url"]
    webhook_id, state, url, events, collections = row.split()
    assert (state, url, events, collections) == ("active", receiver.url(), "*", "docs")
    assert secret_line.startswith("secret  whsec_") and "shown only now" in once
    secret = secret_line.split()[1]

    status, out, _ = run("webhooks", "ls")
    assert status == 0 and out.splitlines()[1].split() == [webhook_id, "active", receiver.url(), "*", "docs"]
    assert "secret" not in out and secret not in out

    status, out, err = run("webhooks", "test", webhook_id)
    assert status == 0 and out.startswith("webhook.test delivery "), err
    (message,) = receiver.wait_for(1)
    assert standardwebhooks.Webhook(secret).verify(message.body, message.headers)["type"] == "webhook.test"

    def delivered() -> list[Any] | None:
        listed = json.loads(run("webhooks", "deliveries", webhook_id, "--json")[1])["deliveries"]
        return listed if listed and listed[0]["state"] == "delivered" else None

    (delivery,) = wait_until(delivered)
    status, out, _ = run("webhooks", "deliveries", webhook_id, "--limit", "5")
    assert status == 0
    assert out.splitlines()[1].split()[:6] == [delivery["deliveryId"], "webhook.test", "delivered", "1", "HTTP", "200"]

    status, out, _ = run("webhooks", "rotate", webhook_id)
    assert status == 0
    rotated = next(line.split()[1] for line in out.splitlines() if line.startswith("secret "))
    assert rotated.startswith("whsec_") and rotated != secret
    assert "previous secret signs too until" in out and "shown only now" in out

    status, out, _ = run("webhooks", "replay", webhook_id, delivery["deliveryId"])
    assert status == 0 and f"under webhook-id {message.headers['webhook-id']}" in out
    replayed = receiver.wait_for(2)[1]
    assert replayed.headers["webhook-id"] == message.headers["webhook-id"] and replayed.body == message.body
    for signing in (secret, rotated):  # both sign while the rotation overlaps
        standardwebhooks.Webhook(signing).verify(replayed.body, replayed.headers)

    status, out, _ = run("webhooks", "enable", webhook_id, "--json")
    assert status == 0 and json.loads(out)["state"] == "active"
    assert run("webhooks", "rm", webhook_id) == (0, f"{webhook_id} deleted\n", "")
    assert run("webhooks", "ls")[1] == "no webhooks\n"
    # The API's refusals, its sentence as it gave it, exit 1.
    status, _, err = run("webhooks", "rm", webhook_id)
    assert status == 1 and err.startswith(f"quire webhooks rm: {webhook_id}: HTTP 404: ")
    status, _, err = run("webhooks", "add", "https://10.1.2.3/hook")
    assert status == 1 and "'private'" in err
    status, _, err = run("webhooks", "add", receiver.url(), "--events", "file.exploded")
    assert status == 1 and "unknown event type" in err


def test_events_are_listed_after_a_cursor_and_followed_as_they_are_published(
    stack: Stack, run: Run, token: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, err = run("events", "--after", "latest")
    assert status == 0 and out == "" and err.startswith("next cursor: ")
    start = err.split()[-1]
    first = stack.processed_markdown(token, "plan.md", DOC, None)
    stack.container.event_relay.relay_all()

    status, out, err = run("events", "--after", start)
    assert status == 0
    (line,) = [line for line in out.splitlines() if " file.version.indexed " in line]
    assert f"  docs  file={first['fileId']} version={first['versionId']}" in line
    caught_up = err.split()[-1]
    assert run("events", "--after", caught_up) == (0, "", f"next cursor: {caught_up}\n")
    status, out, _ = run("events", "--after", start, "--type", "file.deleted", "--json")
    assert status == 0 and json.loads(out)["events"] == []

    # Following: caught up, the command waits (the client's backoff); while it waits a second file is indexed,
    # and the next poll prints its event. The hidden --max-events ends the follow.
    uploads: list[Any] = []

    def upload_while_waiting(seconds: float) -> None:
        if not uploads:
            uploads.append(stack.processed_markdown(token, "memo.md", DOC, None))
            stack.container.event_relay.relay_all()

    monkeypatch.setattr(events_cli, "time", SimpleNamespace(sleep=upload_while_waiting))
    status, out, _ = run(
        "events", "--after", caught_up, "--type", "file.version.indexed", "--follow", "--max-events", "1", "--json"
    )
    assert status == 0 and len(uploads) == 1
    (followed,) = [json.loads(line) for line in out.splitlines()]
    assert followed["type"] == "file.version.indexed" and followed["data"]["fileId"] == uploads[0]["fileId"]

    # Ctrl-C while waiting ends the follow with exit 0, after what it printed.
    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(events_cli, "time", SimpleNamespace(sleep=interrupted))
    status, out, _ = run("events", "--after", start, "--type", "file.version.indexed", "--follow")
    assert status == 0
    assert [line.split("file=")[1].split()[0] for line in out.splitlines()] == [
        first["fileId"],
        uploads[0]["fileId"],
    ]
    # A cursor the API never gave: its sentence, exit 1.
    status, _, err = run("events", "--after", "abc")
    assert status == 1 and err.startswith("quire events: HTTP 400: ") and "cursor" in err
