"""A careless or hostile caller gets a 4xx that names the problem, never a 500.

NUL is not text: PostgreSQL refuses it in a text parameter, so a NUL that reached a query was a 500. Every
route that takes text is tried with one, in the body, the query string and the path.
"""

import json
import urllib.parse
import uuid

import pytest

from tests.integration.files_stack import DOCX_TYPE, Stack

NUL = "\x00"
# A file id no stack has: fixed, not uuid4(), so that the test ids are the same in every pytest-xdist worker.
UNKNOWN_FILE = uuid.UUID("6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f")


def body_requests(collection: str) -> list[tuple[str, str, dict[str, object]]]:
    upload = {"collectionId": collection, "filename": "notes.txt", "mediaType": "text/plain", "byteSize": 10}
    search = {"query": "quarterly revenue", "limit": 3}
    return [
        ("POST", "/v1/search", {**search, "query": f"quarterly{NUL} revenue"}),
        ("POST", "/v1/search", {**search, "filters": {"filename": f"report{NUL}.pdf"}}),
        ("POST", "/v1/search", {**search, "filters": {"collections": [f"docs{NUL}"]}}),
        ("POST", "/v1/search", {**search, "filters": {"mediaTypes": [f"application/pdf{NUL}"]}}),
        ("POST", "/v1/uploads", {**upload, "filename": f"notes{NUL}.txt"}),
        ("POST", "/v1/uploads", {**upload, "collectionId": f"docs{NUL}"}),
        ("POST", "/v1/uploads", {**upload, "mediaType": f"text/plain{NUL}"}),
    ]


@pytest.mark.parametrize("index", range(len(body_requests("docs"))))
def test_a_nul_in_a_request_body_is_a_400_that_names_it(stack: Stack, index: int) -> None:
    method, path, body = body_requests("docs")[index]
    status, answer = stack.json(method, path, stack.token(), body)
    assert status == 400, (path, body, answer)
    assert "NUL" in json.dumps(answer), answer


@pytest.mark.parametrize(
    "path",
    [
        f"/v1/files?collectionId=docs{urllib.parse.quote(NUL)}",
        f"/v1/files?cursor={urllib.parse.quote(NUL)}abc",
        f"/v1/files/{UNKNOWN_FILE}/content?versionId={urllib.parse.quote(NUL)}",
        f"/v1/files/{UNKNOWN_FILE}/document?cursor={urllib.parse.quote(NUL)}",
        f"/v1/usage?since={urllib.parse.quote(NUL)}",
    ],
)
def test_a_nul_in_the_query_string_is_a_4xx_never_a_500(stack: Stack, path: str) -> None:
    status, answer = stack.call("GET", path, stack.token())
    assert 400 <= status < 500, (path, status, answer)


def test_a_nul_in_a_path_parameter_is_not_found_like_any_other_unknown_id(stack: Stack) -> None:
    for method, path in (
        ("GET", f"/v1/files/{urllib.parse.quote(NUL)}"),
        ("DELETE", f"/v1/collections/docs{urllib.parse.quote(NUL)}/files"),
    ):
        status, answer = stack.call(method, path, stack.token())
        assert status in (400, 404), (path, status, answer)


def test_a_nul_in_a_new_versions_filename_is_a_400(stack: Stack) -> None:
    token = stack.token()
    ticket = stack.start_upload(token, "report.docx", DOCX_TYPE, 100)
    status, answer = stack.json(
        "POST",
        f"/v1/files/{ticket['fileId']}/versions",
        token,
        {"filename": f"report{NUL}.docx", "mediaType": DOCX_TYPE, "byteSize": 100},
    )
    assert status == 400, answer
    assert "NUL" in json.dumps(answer), answer


LONE_SURROGATE = "\ud800"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/search", {"query": f"quarterly{LONE_SURROGATE}", "limit": 3}),
        ("/v1/search", {"query": "quarterly", "mode": "keyword", "filters": {"filename": f"a{LONE_SURROGATE}"}}),
        ("/v1/search", {"query": "quarterly", "filters": {"mediaTypes": [f"application/pdf{LONE_SURROGATE}"]}}),
        (
            "/v1/uploads",
            {"collectionId": "docs", "filename": f"{LONE_SURROGATE}.txt", "mediaType": "text/plain", "byteSize": 10},
        ),
    ],
)
def test_half_a_surrogate_pair_in_a_request_body_is_a_400_that_names_it(
    stack: Stack, path: str, body: dict[str, object]
) -> None:
    # json.dumps writes the lone surrogate as the escape \ud800, as a hostile client would send it.
    status, answer = stack.json("POST", path, stack.token(), body)
    assert status == 400, (path, body, answer)
    assert "surrogate" in answer["message"], answer
