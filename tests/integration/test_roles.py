"""Roles per collection over HTTP: reading is not writing, writing is not administering.

Every route that changes something is called by a reader (403 naming the role, since it sees the resource), by a
caller of another collection and by one of another tenant (404, byte for byte the answer for a random id), and by a
writer where the route is an admin's. Nothing any refused call asked for happened.
"""

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from shared.domain.auth import Role
from tests.builders.pdf import pdf_of
from tests.integration.api_steps import REPORT, create, indexed, search
from tests.integration.files_stack import Stack

TENANT = "roles"


@pytest.fixture(scope="module")
def seeded(stack: Stack) -> dict[str, str]:
    """A file, a PDF, an artifact, a pending replacement and an open upload session in collection `docs`, made by
    its admin."""
    admin = stack.token(tenant=TENANT, role=Role.ADMIN)
    note = indexed(stack, admin, "policy.md", b"# Policy\n\nThe okapi budget is 400 EUR.\n")
    pdf = stack.upload(admin, "scan.pdf", "application/pdf", pdf_of("Page one", "Page two"))
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    artifact = create(stack, admin, {"markdown": REPORT})
    status, replacement = stack.json(
        "POST", f"/v1/files/{note['fileId']}/replacements", admin, {"markdown": "# Policy\n\nNew text.\n"}
    )
    assert status == 201, replacement
    session = {"collectionId": "docs", "filename": "big.md", "mediaType": "text/markdown", "byteSize": 10}
    status, upload = stack.json("POST", "/v1/uploads", admin, {**session, "multipart": True})
    assert status == 201, upload
    return {
        "upload": upload["uploadId"],
        "file": note["fileId"],
        "pdf": pdf["fileId"],
        "artifact": artifact["artifactId"],
        "replacement": replacement["replacementId"],
    }


# (route, body) for each id the route names; `ids` maps a kind to the id to use (a real one or a random one).
Ids = dict[str, str]
WRITES: list[tuple[str, str, Callable[[Ids], Any]]] = [
    (
        "POST",
        "/v1/uploads",
        lambda ids: {
            "collectionId": ids["collection"],
            "filename": "n.md",
            "mediaType": "text/markdown",
            "byteSize": 10,
        },
    ),
    (
        "POST",
        "/v1/files/{file}/versions",
        lambda ids: {"filename": "n.md", "mediaType": "text/markdown", "byteSize": 10},
    ),
    ("POST", "/v1/files/{pdf}/scan", lambda ids: None),
    ("DELETE", "/v1/files/{file}", lambda ids: None),
    ("POST", "/v1/files/{file}/conversions", lambda ids: {"format": "pdf"}),
    ("POST", "/v1/files/{file}/replacements", lambda ids: {"markdown": "# Policy\n\nPoisoned.\n"}),
    ("POST", "/v1/artifacts", lambda ids: {"collectionId": ids["collection"], "name": "x", "markdown": "# x\n"}),
    ("POST", "/v1/artifacts/{artifact}/versions", lambda ids: {"expectedLatestVersion": 1, "markdown": "# y\n"}),
    ("POST", "/v1/artifacts/{artifact}/restore", lambda ids: {"version": 1, "expectedLatestVersion": 1}),
    (
        "POST",
        "/v1/artifacts/{artifact}/proposals",
        lambda ids: {"baseVersion": 1, "operations": [{"op": "delete", "blockId": "b2"}]},
    ),
    ("POST", "/v1/artifacts/{artifact}/versions/1/exports", lambda ids: {"format": "pdf"}),
    ("POST", "/v1/pdf/split", lambda ids: {"fileId": ids["pdf"], "ranges": ["1"]}),
    ("POST", "/v1/pdf/watermark", lambda ids: {"fileId": ids["pdf"], "text": "DRAFT"}),
    ("POST", "/v1/pdf/merge", lambda ids: {"sources": [{"fileId": ids["pdf"]}, {"fileId": ids["pdf"]}]}),
    ("POST", "/v1/pdf/compose", lambda ids: {"pages": [{"fileId": ids["pdf"], "pages": "1"}]}),
    ("POST", "/v1/pdf/create", lambda ids: {"collectionId": ids["collection"], "name": "r", "markdown": "# r\n"}),
    ("PATCH", "/v1/files/{file}/metadata", lambda ids: {"set": {"region": "eu"}}),
    ("POST", "/v1/uploads/{upload}/parts", lambda ids: {"partNumbers": [1]}),
    ("POST", "/v1/uploads/{upload}/complete", lambda ids: {"parts": [{"partNumber": 1, "etag": "0" * 32}]}),
    ("DELETE", "/v1/uploads/{upload}", lambda ids: None),
    ("POST", "/v1/files/metadata", lambda ids: {"files": [{"fileId": ids["file"], "set": {"region": "eu"}}]}),
]
ADMINISTRATION: list[tuple[str, str, Callable[[Ids], Any]]] = [
    ("DELETE", "/v1/collections/{collection}/files", lambda ids: None),
    ("POST", "/v1/files/{file}/move", lambda ids: {"collectionId": ids["collection"]}),
    ("POST", "/v1/replacements/{replacement}/approve", lambda ids: None),
    ("POST", "/v1/replacements/{replacement}/reject", lambda ids: None),
    ("PUT", "/v1/collections/{collection}/metadata-schema", lambda ids: {"keys": {"region": {"type": "string"}}}),
]


def call(stack: Stack, token: str, route: tuple[str, str, Callable[[Ids], Any]], ids: Ids) -> tuple[int, Any]:
    method, path, body = route
    return stack.json(method, path.format(**ids), token, body(ids))


def real_ids(seeded: dict[str, str]) -> Ids:
    return {**seeded, "collection": "docs"}


def random_ids() -> Ids:
    kinds = ("file", "pdf", "artifact", "replacement", "upload")
    return {kind: str(uuid.uuid4()) for kind in kinds} | {"collection": "docs"}


def state_of(stack: Stack, token: str, seeded: dict[str, str]) -> Any:
    """Everything a refused call could have changed, as the admin sees it."""
    files = stack.json("GET", "/v1/files?limit=100", token)[1]["files"]
    artifact = stack.json("GET", f"/v1/artifacts/{seeded['artifact']}/versions", token)[1]
    replacement = stack.json("GET", f"/v1/replacements/{seeded['replacement']}", token)[1]
    upload = stack.json("GET", f"/v1/uploads/{seeded['upload']}", token)[1]
    return (
        (upload["state"], upload["parts"]),
        sorted((f["fileId"], f["current"]["versionId"], f["current"]["state"], f["metadataRevision"]) for f in files),
        artifact["latestVersion"],
        replacement["state"],
    )


@pytest.mark.parametrize("route", WRITES + ADMINISTRATION, ids=lambda route: f"{route[0]} {route[1]}")
def test_a_reader_is_refused_every_write_with_403_naming_the_role_and_nothing_changes(
    stack: Stack, seeded: dict[str, str], route: tuple[str, str, Callable[[Ids], Any]]
) -> None:
    admin = stack.token(tenant=TENANT, role=Role.ADMIN)
    reader = stack.token(tenant=TENANT, sub="rita", role=Role.READ)
    before = state_of(stack, admin, seeded)
    status, body = call(stack, reader, route, real_ids(seeded))
    needed = "admin" if route in ADMINISTRATION else "write"
    assert status == 403, body
    assert body["error"] == "forbidden" and f"the {needed} role in collection 'docs'" in body["message"], body
    assert "grants read" in body["message"]
    assert state_of(stack, admin, seeded) == before
    # The reader still reads what it was refused to change.
    assert stack.json("GET", f"/v1/files/{seeded['file']}", reader)[0] == 200


@pytest.mark.parametrize("route", ADMINISTRATION, ids=lambda route: f"{route[0]} {route[1]}")
def test_a_writer_is_refused_what_only_an_admin_may_do(
    stack: Stack, seeded: dict[str, str], route: tuple[str, str, Callable[[Ids], Any]]
) -> None:
    admin = stack.token(tenant=TENANT, role=Role.ADMIN)
    writer = stack.token(tenant=TENANT, sub="wes", role=Role.WRITE)
    before = state_of(stack, admin, seeded)
    status, body = call(stack, writer, route, real_ids(seeded))
    assert (
        status == 403 and "the admin role in collection 'docs'" in body["message"] and "grants write" in body["message"]
    ), body
    assert state_of(stack, admin, seeded) == before


@pytest.mark.parametrize("route", WRITES + ADMINISTRATION, ids=lambda route: f"{route[0]} {route[1]}")
@pytest.mark.parametrize("outsider", ["other-collection", "other-tenant"])
def test_a_caller_that_cannot_see_the_resource_gets_the_404_of_a_random_id_whatever_its_role(
    stack: Stack, seeded: dict[str, str], route: tuple[str, str, Callable[[Ids], Any]], outsider: str
) -> None:
    # An admin elsewhere: its roles must not leak across collections or tenants.
    if outsider == "other-collection":
        token = stack.token(tenant=TENANT, collections=("elsewhere",), sub="olga", role=Role.ADMIN)
    else:
        token = stack.token(tenant="roles-intruder", collections=("docs",), sub="ivan", role=Role.ADMIN)
    admin = stack.token(tenant=TENANT, role=Role.ADMIN)
    before = state_of(stack, admin, seeded)
    real = call(stack, token, route, real_ids(seeded))
    if (
        route[1]
        in (
            "/v1/uploads",
            "/v1/artifacts",
            "/v1/pdf/create",
            "/v1/collections/{collection}/files",
            "/v1/collections/{collection}/metadata-schema",
        )
        and outsider == "other-tenant"
    ):
        # The intruder administers its own tenant's `docs`: naming a collection is naming its own.
        assert real[0] in (200, 201, 202), real
        return
    random = call(stack, token, route, random_ids())
    assert real[0] == 404 and real == random, (real, random)
    assert state_of(stack, admin, seeded) == before


def test_the_roles_do_what_they_grant_and_a_token_without_roles_only_reads(stack: Stack) -> None:
    tenant = "roles-granted"
    plain = stack.token(tenant=tenant, role=Role.READ)  # collections only: no role claims at all
    writer = stack.token(tenant=tenant, sub="wes", role=Role.WRITE)
    admin = stack.token(tenant=tenant, sub="ada", role=Role.ADMIN)
    status, refused = stack.json(
        "POST",
        "/v1/uploads",
        plain,
        {"collectionId": "docs", "filename": "a.md", "mediaType": "text/markdown", "byteSize": 5},
    )
    assert status == 403 and refused["error"] == "forbidden"
    record = indexed(stack, writer, "notes.md", b"# Notes\n\nThe quokka audit passed.\n")
    assert search(stack, plain, "quokka")["outcome"] == "found"
    assert stack.json("GET", "/v1/me", plain)[1]["roles"] == {"docs": "read"}
    assert stack.json("GET", "/v1/me", writer)[1]["roles"] == {"docs": "write"}
    assert stack.json("POST", "/v1/reindex", writer)[0] == 403
    assert stack.json("POST", "/v1/reindex", admin)[0] == 202
    assert stack.json("DELETE", f"/v1/files/{record['fileId']}", writer)[0] == 202
    assert stack.json("DELETE", "/v1/collections/docs/files", admin)[0] == 202


# The routes that change nothing, though they are not GETs (searching reads), and the one whose roles the last
# test of the grants calls (re-indexing covers every collection the caller administers: no single resource).
# Asking is reading too: an answer is stored as the asker's own record, feedback on it likewise, both with the read
# role only (tests/integration/test_answers_api.py asks and gives feedback as readers of their collections).
READS_BY_POST = {"POST /v1/search", "POST /v1/answer", "POST /v1/answers/{answer_id}/feedback"}
TESTED_BY_THE_GRANTS = {"POST /v1/reindex"}
# A webhook belongs to the collections it names: only an admin of every one of them registers or touches it, anyone
# else gets a 404 (tests/integration/test_events_api.py, test_only_an_admin_of_every_collection_...).
TESTED_WITH_THE_WEBHOOKS = {
    "POST /v1/webhooks",
    "DELETE /v1/webhooks/{webhook_id}",
    "POST /v1/webhooks/{webhook_id}/rotate-secret",
    "POST /v1/webhooks/{webhook_id}/enable",
    "POST /v1/webhooks/{webhook_id}/test",
    "POST /v1/webhooks/{webhook_id}/deliveries/{delivery_id}/replay",
}
# The tools' HTTP twin: its writing tools are called by a reader below (a refusal there is a result, not a 403).
TESTED_AS_TOOLS = {"POST /v1/tools/{name}"}
TOOL_WRITES: dict[str, Callable[[Ids], Any]] = {
    "scan_document": lambda ids: {"fileId": ids["pdf"]},
    "create_artifact": lambda ids: {"collectionId": ids["collection"], "name": "x", "markdown": "# x\n"},
    "update_artifact": lambda ids: {"artifactId": ids["artifact"], "expectedLatestVersion": 1, "markdown": "# y\n"},
    "export_artifact": lambda ids: {"artifactId": ids["artifact"], "format": "pdf"},
    "create_pdf": lambda ids: {"collectionId": ids["collection"], "name": "r", "markdown": "# r\n"},
    "convert_file": lambda ids: {"fileId": ids["file"], "format": "pdf"},
}


def test_the_writing_tools_are_the_ones_a_reader_is_refused_below() -> None:
    from functions.tools.catalog import TOOLS

    assert set(TOOL_WRITES) == {tool.name for tool in TOOLS if not tool.read_only}


@pytest.mark.parametrize("tool", sorted(TOOL_WRITES))
def test_a_reader_is_refused_every_writing_tool_naming_the_role_and_nothing_changes(
    stack: Stack, seeded: dict[str, str], tool: str
) -> None:
    admin = stack.token(tenant=TENANT, role=Role.ADMIN)
    reader = stack.token(tenant=TENANT, sub="rita", role=Role.READ)
    before = state_of(stack, admin, seeded)
    status, body = stack.json("POST", f"/v1/tools/{tool}", reader, TOOL_WRITES[tool](real_ids(seeded)))
    assert status == 200 and body["isError"], body
    error = body["error"]
    assert error["error"] == "forbidden" and "the write role in collection 'docs'" in error["message"], error
    assert state_of(stack, admin, seeded) == before
    if tool in ("create_artifact", "create_pdf"):
        return  # they name a collection, not an id: another tenant's "docs" is its own
    # Another tenant's caller, whatever its role, gets the answer a random id gets.
    outsider = stack.token(tenant="roles-elsewhere", role=Role.ADMIN)
    foreign = stack.json("POST", f"/v1/tools/{tool}", outsider, TOOL_WRITES[tool](real_ids(seeded)))
    random = stack.json("POST", f"/v1/tools/{tool}", outsider, TOOL_WRITES[tool](random_ids()))
    assert foreign == random


def test_every_route_that_is_not_a_read_is_called_by_these_tests(stack: Stack) -> None:
    """A new writing route the lists above do not name fails here, instead of going untested for its role."""
    status, document = stack.json("GET", "/v1/openapi.json", None)
    assert status == 200
    unsafe = {
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method in operations
        if method.upper() not in ("GET", "HEAD", "OPTIONS")
    }
    called = {f"{method} {path.replace('{pdf}', '{file}')}" for method, path, _ in WRITES + ADMINISTRATION}
    named = {route: route for route in unsafe}
    # The OpenAPI document names parameters as the routes do; the lists above name the seeded id they use.
    aliases = {
        "{file_id}": "{file}",
        "{artifact_id}": "{artifact}",
        "{replacement_id}": "{replacement}",
        "{collection_id}": "{collection}",
        "{upload_id}": "{upload}",
        "{version}": "1",
    }
    for route in list(named):
        for parameter, seeded in aliases.items():
            named[route] = named[route].replace(parameter, seeded)
    missing = {
        route
        for route, alias in named.items()
        if alias not in called
        and route not in READS_BY_POST | TESTED_BY_THE_GRANTS | TESTED_AS_TOOLS | TESTED_WITH_THE_WEBHOOKS
    }
    assert missing == set(), f"routes no role test calls: {sorted(missing)}"
