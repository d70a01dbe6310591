"""A file's metadata `language` is a declaration (issue 36): changing it re-indexes the file's current version, whose
chunks are then read in the declared language; a value that names no language with an analyser declares nothing and
re-indexes nothing; a version whose upload declared its language keeps it."""

import uuid

import pytest

from shared.domain.auth import Role
from tests.integration.api_steps import indexed, search
from tests.integration.files_stack import Stack

# "Gift" is German for poison and English for a present: too short and too plain to tell, so detection calls it English.
NOTE = b"# Gift\n\nGift im Keller.\n"


def _patch(stack: Stack, token: str, file_id: str, body: dict[str, object]) -> dict[str, object]:
    status, record = stack.json("PATCH", f"/v1/files/{file_id}/metadata", token, body)
    assert status == 200, record
    return record  # type: ignore[no-any-return]


def test_a_metadata_language_change_re_indexes_the_file_in_that_language(stack: Stack) -> None:
    token = stack.token(tenant=f"l{uuid.uuid4().hex[:10]}", collections=("docs",))
    note = indexed(stack, token, "note.md", NOTE)
    file_id = note["fileId"]
    before = note["current"]
    assert before["declaredLanguage"] is None and before["language"] != "de"
    # German's stemmer reads "Kellers" as "Keller": only the German analyser finds it.
    assert not [
        hit
        for hit in search(stack, token, "Kellers", mode="keyword").get("hits", [])
        if hit["citation"]["fileId"] == file_id
    ]

    _patch(stack, token, file_id, {"set": {"language": "German"}})
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, record = stack.json("GET", f"/v1/files/{file_id}", token)
    assert status == 200 and record["current"]["processingState"] == "indexed", record
    assert record["current"]["versionId"] == before["versionId"]  # the same version, read again
    assert record["current"]["language"] == "de" and record["current"]["languages"] == ["de"]
    hits = [
        hit
        for hit in search(stack, token, "Kellers", mode="keyword").get("hits", [])
        if hit["citation"]["fileId"] == file_id
    ]
    assert hits and hits[0]["citation"]["language"] == "de"

    # A product's own value ("ts": TypeScript) declares nothing: the German declaration is gone, so the version is
    # read again with its language detected.
    _patch(stack, token, file_id, {"set": {"language": "ts"}})
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, record = stack.json("GET", f"/v1/files/{file_id}", token)
    assert record["current"]["processingState"] == "indexed" and record["current"]["language"] == before["language"]
    # Another key, or the same non-language again, changes no language: no re-index.
    for change in ({"customer": "acme"}, {"language": "ts2"}):
        record = _patch(stack, token, file_id, {"set": change})
        assert record["current"]["processingState"] == "indexed"  # type: ignore[index]


def test_an_upload_s_declared_language_outranks_the_metadata(stack: Stack) -> None:
    token = stack.token(tenant=f"l{uuid.uuid4().hex[:10]}", collections=("docs",))
    status, ticket = stack.json(
        "POST",
        "/v1/uploads",
        token,
        {
            "collectionId": "docs",
            "filename": "note.md",
            "mediaType": "text/markdown",
            "byteSize": len(NOTE),
            "language": "de",
        },
    )
    assert status in (200, 201), ticket
    assert stack.post_bytes(ticket, NOTE, "text/markdown") in (200, 201, 204)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    _patch(stack, token, ticket["fileId"], {"set": {"language": "es"}})
    status, record = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert record["current"]["processingState"] == "indexed" and record["current"]["language"] == "de"


def test_a_language_change_no_re_index_can_follow_is_kept_and_answered_200(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant = f"l{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant, collections=("docs",))
    file_id = indexed(stack, token, "note.md", NOTE)["fileId"]
    # A reader cannot change the language, so nothing is re-indexed for it.
    reader = stack.token(tenant=tenant, collections=("docs",), role=Role.READ)
    status, _ = stack.json("PATCH", f"/v1/files/{file_id}/metadata", reader, {"set": {"language": "de"}})
    assert status == 403
    status, record = stack.json("GET", f"/v1/files/{file_id}", token)
    assert record["current"]["processingState"] == "indexed" and "language" not in record["metadata"]

    def unreachable(*args: object) -> None:
        raise ConnectionError("the database went away")

    # The change is committed before the re-index is queued: a failure there (the database, the workflow, the
    # embedder, the day's embedding limit) is logged, never a 500 for a change that was made.
    monkeypatch.setattr(stack.container.file_metadata, "queue_reindex", unreachable)
    record = _patch(stack, token, file_id, {"set": {"language": "de"}})
    monkeypatch.undo()
    assert record["metadata"] == {"language": "de"}
    assert record["current"]["processingState"] == "indexed"  # type: ignore[index]


def test_a_bulk_change_of_more_languages_than_it_may_re_index_is_refused_naming_the_limit(stack: Stack) -> None:
    token = stack.token(tenant=f"l{uuid.uuid4().hex[:10]}", collections=("docs",))
    note = indexed(stack, token, "note.md", NOTE)
    files = [{"fileId": str(uuid.uuid4()), "set": {"language": "de"}} for _ in range(100)]
    status, refused = stack.json(
        "POST", "/v1/files/metadata", token, {"files": [*files, {"fileId": note["fileId"], "set": {"language": "de"}}]}
    )
    assert status == 400 and "at most 100" in refused["message"] and "language" in refused["message"], refused
    status, record = stack.json("GET", f"/v1/files/{note['fileId']}", token)
    assert record["metadata"] == {} and record["current"]["processingState"] == "indexed"  # nothing changed


def test_a_bulk_change_re_indexes_each_file_whose_language_it_changes(stack: Stack) -> None:
    token = stack.token(tenant=f"l{uuid.uuid4().hex[:10]}", collections=("docs",))
    german, other = indexed(stack, token, "a.md", NOTE), indexed(stack, token, "b.md", NOTE)
    body = {
        "files": [
            {"fileId": german["fileId"], "set": {"language": "de"}},
            {"fileId": other["fileId"], "set": {"team": "x"}},
        ]
    }
    status, answer = stack.json("POST", "/v1/files/metadata", token, body)
    assert status == 200, answer
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    for record, language in ((german, "de"), (other, other["current"]["language"])):
        status, now = stack.json("GET", f"/v1/files/{record['fileId']}", token)
        assert now["current"]["processingState"] == "indexed" and now["current"]["language"] == language, now
