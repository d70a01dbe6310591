"""Each kind of change a product is told about (issue 34) is written as its event, once, in the transaction that
made it: exports rendered and failed, replacements pending and approved, a re-index finished, a file deleted."""

from typing import Any

from tests.integration.api_steps import RUNBOOK, create, drain, indexed
from tests.integration.files_stack import Stack

TENANT = "ev-kinds"


def events(stack: Stack, token: str) -> list[Any]:
    stack.container.event_relay.relay_all()
    status, page = stack.json("GET", "/v1/events?limit=500", token)
    assert status == 200, page
    return page["events"]  # type: ignore[no-any-return]


def of_type(found: list[Any], kind: str) -> list[Any]:
    return [event for event in found if event["type"] == kind]


def test_exports_replacements_reindexing_and_deletion_each_write_their_event(stack: Stack) -> None:
    token = stack.token(tenant=TENANT)
    source = indexed(stack, token, "runbook.md", RUNBOOK)
    file_id, version_id = source["fileId"], source["current"]["versionId"]

    status, claimed = stack.json("POST", f"/v1/files/{file_id}/conversions", token, {"format": "docx"})
    assert status == 202
    blocks = [{"kind": "table", "table": {"rows": [["a", "b"], ["w" * 6_000, "y"]], "header_rows": 1}}]
    artifact_id = create(stack, token, {"blocks": blocks})["artifactId"]
    status, failing = stack.json("POST", f"/v1/artifacts/{artifact_id}/versions/1/exports", token, {"format": "pdf"})
    assert status == 202
    drain(stack)
    found = events(stack, token)
    (rendered,) = of_type(found, "export.rendered")
    assert rendered["data"]["exportId"] == claimed["exportId"] and rendered["data"]["format"] == "docx"
    (failed,) = of_type(found, "export.failed")
    assert failed["data"]["exportId"] == failing["exportId"] and "taller than a page" in failed["data"]["failureReason"]

    status, pending = stack.json(
        "POST", f"/v1/files/{file_id}/replacements", token, {"markdown": "# Runbook\n\nRestart the relay first.\n"}
    )
    assert status == 201
    status, approved = stack.json("POST", f"/v1/replacements/{pending['replacementId']}/approve", token)
    assert status == 200, approved
    stack.events.join()  # the new version's Object Created event, then its processing
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    found = events(stack, token)
    (asked,) = of_type(found, "replacement.pending")
    (granted,) = of_type(found, "replacement.approved")
    assert asked["data"]["replacementId"] == granted["data"]["replacementId"] == pending["replacementId"]
    new_version = granted["data"]["versionId"]
    assert {e["data"]["versionId"] for e in of_type(found, "file.version.indexed")} >= {version_id, new_version}

    # A version embedded by another model is re-indexed: it ends in reindex.finished, not a second "indexed".
    with stack.container.database.tenant_transaction(TENANT) as conn:
        conn.execute(
            "UPDATE file_versions SET embedding_model = 'an-older-model' WHERE version_id = %s", (new_version,)
        )
    report = stack.container.reindexer.start_batch(TENANT, None, limit=10)
    assert report.queued == 1
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    found = events(stack, token)
    (finished,) = of_type(found, "reindex.finished")
    assert finished["data"]["versionId"] == new_version and finished["data"]["attempt"] == 2
    assert [e["data"]["versionId"] for e in of_type(found, "file.version.indexed")].count(new_version) == 1

    status, _ = stack.json("DELETE", f"/v1/files/{file_id}", token)
    assert status in (200, 202, 204)
    found = events(stack, token)
    assert [e["data"]["fileId"] for e in of_type(found, "file.deleted")] == [file_id]
    # Listed in the order they were published: positions only grow.
    cursors = [0]
    while True:
        page = stack.json("GET", f"/v1/events?limit=1&after={cursors[-1]}", token)[1]
        if not page["events"]:
            break
        cursors.append(int(page["nextCursor"]))
    assert cursors == sorted(set(cursors)) and len(cursors) == len(found) + 1
