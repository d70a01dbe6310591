"""`quire webhooks` and `quire events` read locally (issue 34): an event on one line, the webhook and delivery tables
with what went wrong, and usage errors (exit 2) before any client is made (the commands against the API:
tests/integration/test_events_cli.py)."""

from typing import Any

import pytest

from shared import cli
from shared.cli import events
from shared.cli.events import event_line

FILE, VERSION = "f-1", "v-1"


@pytest.mark.parametrize(
    ("data", "type_", "tail"),
    [
        (
            {"fileId": FILE, "versionId": VERSION, "chunkCount": 3},
            "file.version.indexed",
            f"file={FILE} version={VERSION}",
        ),
        (
            {
                "fileId": FILE,
                "versionId": VERSION,
                "failureReason": "encrypted",
                "failureSentence": "Remove the password",
            },
            "file.version.failed",
            f"file={FILE} version={VERSION}  encrypted",
        ),
        ({"fileId": FILE, "versionId": VERSION, "rejectionReason": "too_large"}, "file.version.rejected", "too_large"),
        ({"fileId": FILE, "direction": "out"}, "file.moved", f"file={FILE} direction=out"),
        ({"fileId": FILE, "metadataRevision": 4}, "file.metadata.changed", f"file={FILE} revision=4"),
        ({"webhookId": "w-1", "reason": "failing for 3 days"}, "webhook.disabled", "webhook=w-1  failing for 3 days"),
    ],
)
def test_an_event_is_one_line_of_when_what_where_which_and_why(data: dict[str, Any], type_: str, tail: str) -> None:
    event = {"eventId": "e", "type": type_, "occurredAt": "2026-12-07T05:00:00Z", "collectionId": "docs", "data": data}
    line = event_line(event)
    assert line.startswith(f"2026-12-07T05:00:00Z  {type_}  docs  ") and line.endswith(tail)
    assert "\n" not in line and "Remove the password" not in line


def webhook(**changes: Any) -> dict[str, Any]:
    return {
        "webhookId": "w-1",
        "state": "active",
        "url": "https://hooks.example.com/q",
        "events": ["file.version.indexed", "file.version.failed"],
        "collectionIds": ["docs", "hr"],
        "failingSince": None,
        "disabledReason": None,
        **changes,
    }


def test_the_webhook_table_says_since_when_one_fails_or_why_it_was_disabled(capsys: pytest.CaptureFixture[str]) -> None:
    events._print_webhooks(
        [
            webhook(),
            webhook(webhookId="w-2", failingSince="2026-12-06T00:00:00Z"),
            webhook(webhookId="w-3", state="disabled", disabledReason="every delivery failed for 3 days"),
        ]
    )
    header, first, failing, disabled = capsys.readouterr().out.splitlines()
    assert header.split()[:5] == ["webhook", "state", "url", "events", "collections"]
    assert first.split() == [
        "w-1",
        "active",
        "https://hooks.example.com/q",
        "file.version.indexed,file.version.failed",
        "docs,hr",
    ]
    assert failing.endswith("failing since 2026-12-06T00:00:00Z")
    assert disabled.split()[1] == "disabled" and disabled.endswith("every delivery failed for 3 days")
    # Columns line up: each cell starts where its header does.
    assert first.index("https://") == header.index("url") == disabled.index("https://")


def test_the_delivery_table_gives_the_last_status_and_error(capsys: pytest.CaptureFixture[str]) -> None:
    base = {"eventType": "file.version.indexed", "attempts": 2, "createdAt": "2026-12-07T05:00:00Z"}
    events._print_deliveries(
        [
            {
                **base,
                "deliveryId": "d-1",
                "state": "pending",
                "lastStatus": 503,
                "lastError": "the endpoint answered 503",
            },
            {**base, "deliveryId": "d-2", "state": "failed", "lastStatus": None, "lastError": "timed out after 10 s"},
            {**base, "deliveryId": "d-3", "state": "delivered", "lastStatus": 200, "lastError": None},
        ]
    )
    _, pending, failed, delivered = capsys.readouterr().out.splitlines()
    assert "HTTP 503; the endpoint answered 503" in pending
    assert failed.split()[:4] == ["d-2", "file.version.indexed", "failed", "2"] and "timed out after 10 s" in failed
    assert "HTTP 200  " in delivered and ";" not in delivered
    events._print_deliveries([])
    assert capsys.readouterr().out == "no deliveries\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["webhooks"], "the following arguments are required: action"),
        (["webhooks", "add"], "the following arguments are required: url"),
        (["webhooks", "deliveries", "W", "--limit", "0"], "argument --limit: must be 1 to 100"),
        (["webhooks", "deliveries", "W", "--limit", "101"], "argument --limit: must be 1 to 100"),
        (["webhooks", "deliveries", "W", "--limit", "ten"], "argument --limit: must be 1 to 100"),
        (["webhooks", "add", "https://h.example.com", "--events", ","], "argument --events: names no event type"),
        (["webhooks", "replay", "W"], "the following arguments are required: delivery_id"),
        (["events", "--type", " , "], "argument --type: names no event type"),
    ],
)
def test_usage_errors_exit_2_before_any_client_is_made(
    argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    made: list[Any] = []
    monkeypatch.setattr(events, "collections_client", lambda *args: made.append(args))
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2 and message in capsys.readouterr().err
    assert made == []
