"""The Python client (quire_client) against the session's local stack: a text file uploaded with the client (ticket,
presigned POST, then waiting on the event feed from its `latest` cursor, the relay running as in the local stack) is
indexed and found by the client's search, and the API's refusals arrive as typed errors carrying its sentence."""

import uuid

import pytest
from quire_client import NotFound, Quire, Unprocessable

from tests.integration.files_stack import Stack


def test_a_file_uploaded_with_the_client_is_indexed_then_found(stack: Stack, relay_worker: None) -> None:
    token = stack.token(tenant=f"c{uuid.uuid4().hex[:10]}", collections=("docs",))
    with Quire(stack.api, token) as client:
        uploaded = client.upload(
            b"The courier code for the north depot is KESTREL-88.\n", "docs", filename="depot.txt", timeout=120
        )
        assert uploaded.outcome == "indexed", uploaded.file
        # Told by its event, not found by polling.
        assert uploaded.event is not None and uploaded.event["type"] == "file.version.indexed"
        assert uploaded.file is not None and uploaded.file["current"]["versionId"] == uploaded.version_id
        answer = client.search({"query": "KESTREL-88", "mode": "keyword"})
        assert answer["outcome"] == "found"
        assert "hits" in answer and answer["hits"][0]["citation"]["fileId"] == uploaded.file_id
        assert [file["fileId"] for file in client.iter_files(collection_id="docs")] == [uploaded.file_id]


def test_the_apis_refusals_are_typed_errors_with_its_sentence(stack: Stack) -> None:
    with Quire(stack.api, stack.token()) as client:
        with pytest.raises(NotFound) as missing:
            client.get_file(str(uuid.uuid4()))
        assert (missing.value.code, missing.value.message) == ("not_found", "Not found")
        with pytest.raises(Unprocessable) as invalid:
            client.create_upload({"collectionId": "docs", "filename": "", "mediaType": "text/plain", "byteSize": 1})
        assert "filename" in invalid.value.message
