"""The tool-call audit without a database: the record's bounds, picking the id arguments out of a hostile call,
the service (a failed write logged with the call and counted, the admin check, keyset cursors) and the
`GET /v1/audit` route on a resolver of its own (the API handler registers the router)."""

import base64
import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast
from uuid import UUID

import pytest
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.utilities.typing import LambdaContext
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from functions.api.errors import register_error_handlers
from functions.api.routes import audit as audit_route
from shared.bootstrap import overridden
from shared.domain.audit import MAX_ARGUMENT_IDS, NOT_AN_ID, ToolCall, id_arguments
from shared.domain.auth import Role, with_role
from shared.domain.errors import Forbidden, InvalidRequest
from shared.local.http_api import LocalLambdaContext
from shared.services import audit as audit_service
from shared.services.audit import ToolAuditLog, decode_cursor, encode_cursor
from shared.services.authorization import ClaimsAuthorizationPolicy
from tests.conftest import load_event
from tests.contracts.tool_calls import AT, tool_call
from tests.fakes import FakeToolCallAudit

CONTEXT = cast(LambdaContext, LocalLambdaContext())


def fields(**changes: Any) -> dict[str, Any]:
    return {**tool_call("acme").model_dump(), **changes}


# --- the record ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"argument_ids": {f"id{n}": "x" for n in range(MAX_ARGUMENT_IDS + 1)}},
        {"argument_ids": {"k" * 65: "x"}},
        {"argument_ids": {"": "x"}},
        {"argument_ids": {"fileId": "x" * 129}},
        {"argument_ids": {"fileId": "a\x00b"}},
        {"argument_ids": {"fileId": "\ud800"}},
        {"tool": "t" * 65},
        {"tool": ""},
        {"tool": "read\nfile"},
        {"outcome": "o" * 65},
        {"outcome": "Not Found"},
        {"subject": ""},
        {"subject": "s" * 256},
        {"tenant_id": "a' OR '1'='1"},
        {"collection_ids": ("docs", "no/slashes")},
        {"collection_ids": tuple(f"c{n}" for n in range(257))},
        {"surface": "grpc"},
        {"duration_ms": -1},
        {"called_at": datetime(2026, 11, 29, 12, 0)},  # no zone
        {"query": "free text is no field of the record"},
    ],
    ids=lambda changes: next(iter(changes)),
)
def test_a_call_outside_the_records_bounds_is_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ToolCall.model_validate(fields(**changes))


def test_a_call_at_the_bounds_is_recorded_as_given() -> None:
    ids = {f"{n:02d}" + "k" * 62: "v" * 128 for n in range(MAX_ARGUMENT_IDS)}
    call = ToolCall.model_validate(fields(argument_ids=ids, tool="t" * 64, outcome="o" * 64, subject="s" * 255))
    assert call.argument_ids == ids


def test_the_time_is_kept_in_utc_and_the_collections_sorted_once_each() -> None:
    paris = timezone(timedelta(hours=1))
    call = ToolCall.model_validate(
        fields(called_at=datetime(2026, 11, 29, 13, 0, tzinfo=paris), collection_ids=("hr", "docs", "hr"))
    )
    assert call.called_at == datetime(2026, 11, 29, 12, 0, tzinfo=UTC) and call.called_at.tzinfo is UTC
    assert call.collection_ids == ("docs", "hr")


def test_only_the_named_id_arguments_are_picked_never_free_text() -> None:
    arguments = {
        "fileId": "0B8E1C52-0000-4000-8000-000000000001",
        "query": "salaries of the board",
        "fileIds": ["a", "b", 3],
        "artifactId": None,
        "limit": 5,
    }
    assert id_arguments(arguments, ["fileId", "fileIds", "artifactId", "missing"]) == {
        "fileId": "0b8e1c52-0000-4000-8000-000000000001",
        "fileIds[0]": "a",
        "fileIds[1]": "b",
    }


def test_text_in_an_ids_place_is_not_kept() -> None:
    picked = id_arguments(
        {"fileId": "Q3 layoffs: Bob, Carol, Dan (confidential)", "collectionId": "hr"}, ["fileId", "collectionId"]
    )
    assert picked == {"fileId": NOT_AN_ID, "collectionId": "hr"}


def test_a_hostile_id_argument_is_cut_and_cleaned_not_refused() -> None:
    picked = id_arguments(
        {"fileId": "x" * 10_000, "artifactId": "a\x00b\ud800", "ids": list("z" * 40)},
        [
            "fileId",
            "artifactId",
            "ids",
        ],
    )
    assert picked["fileId"] == NOT_AN_ID
    assert picked["artifactId"] == NOT_AN_ID
    assert len(picked) == MAX_ARGUMENT_IDS


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(), lambda inner: st.lists(inner, max_size=20), max_leaves=40
)


@given(arguments=st.dictionaries(st.text(max_size=80), json_values, max_size=30))
def test_whatever_a_caller_sends_its_id_arguments_make_a_valid_record(arguments: dict[str, object]) -> None:
    ToolCall.model_validate(fields(argument_ids=id_arguments(arguments, list(arguments))))


# --- the service -----------------------------------------------------------------------------------------------


@dataclass
class RecordingLogger:
    exceptions: list[tuple[str, dict[str, Any]]]

    def exception(self, message: str, *, extra: dict[str, Any]) -> None:
        self.exceptions.append((message, extra))


@pytest.fixture
def store() -> FakeToolCallAudit:
    return FakeToolCallAudit()


@pytest.fixture
def log(store: FakeToolCallAudit) -> ToolAuditLog:
    return ToolAuditLog(store, ClaimsAuthorizationPolicy())


def admin_of(*collections: str) -> Any:
    return with_role("acme", "admin", collections, Role.ADMIN)


def test_a_write_that_fails_is_logged_with_the_whole_call_and_counted_never_raised(
    store: FakeToolCallAudit, log: ToolAuditLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = RecordingLogger([])
    monkeypatch.setattr(audit_service, "logger", recorded)
    call = tool_call("acme", outcome="not_found", collections=())
    assert log.record(call) is True
    store.unreachable = True
    assert log.record(call) is False
    assert log.record(call) is False
    assert log.failed_writes == 2
    message, extra = recorded.exceptions[0]
    assert message == "tool call not written to the audit" and extra["auditWriteFailed"] is True
    # Enough to rebuild the record from the log line alone.
    assert ToolCall.model_validate(extra["toolCall"]) == call
    assert len(store.rows) == 1


@pytest.mark.parametrize("role", [Role.READ, Role.WRITE])
def test_a_caller_who_administers_no_collection_is_refused_naming_the_admin_role(log: ToolAuditLog, role: Role) -> None:
    with pytest.raises(Forbidden, match="needs the admin role"):
        log.recent(with_role("acme", "someone", ["docs", "hr"], role), limit=50, cursor=None)


def test_an_admin_sees_the_calls_of_the_collections_it_administers_and_those_that_reached_none(
    log: ToolAuditLog,
) -> None:
    log.record(tool_call("acme", collections=("docs",), tool="in_docs"))
    log.record(tool_call("acme", collections=("docs", "hr"), tool="in_docs_and_hr"))
    log.record(tool_call("acme", collections=(), tool="refused", outcome="not_found"))
    log.record(tool_call("globex", collections=("docs",), tool="other_tenant"))
    # Readable without being administered is not enough: hr's content shows in a call that acted there too.
    caller = with_role("acme", "admin", ["docs"], Role.ADMIN).model_copy(
        update={"collections": frozenset({"docs", "hr"})}
    )
    assert {call.tool for call in log.recent(caller, limit=50, cursor=None).calls} == {"in_docs", "refused"}


def test_pages_follow_each_other_by_the_cursor_they_return(log: ToolAuditLog) -> None:
    for minute in range(5):
        log.record(tool_call("acme", at=AT + timedelta(minutes=minute)))
    seen, cursor = [], None
    while True:
        page = log.recent(admin_of("docs"), limit=2, cursor=cursor)
        seen += [call.called_at for call in page.calls]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [AT + timedelta(minutes=m) for m in (4, 3, 2, 1, 0)]


@pytest.mark.parametrize(
    "cursor",
    [
        "not-base64-json!",
        "W10",  # []
        "x" * 201,
        # A time with no zone would be read in the database session's.
        base64.urlsafe_b64encode(json.dumps(["2026-11-29T12:00:00", str(UUID(int=1))]).encode()).decode(),
    ],
)
def test_a_cursor_this_api_did_not_return_is_refused(log: ToolAuditLog, cursor: str) -> None:
    with pytest.raises(InvalidRequest, match="cursor is not one this API returned"):
        log.recent(admin_of("docs"), limit=10, cursor=cursor)


def test_a_cursor_names_the_instant_and_the_call_it_stopped_after(log: ToolAuditLog, store: FakeToolCallAudit) -> None:
    log.record(tool_call("acme"))
    record = store.rows[0]
    assert decode_cursor(encode_cursor(record)) == (record.called_at, record.call_id)


@pytest.mark.parametrize("limit", [0, 101])
def test_a_limit_outside_1_to_100_is_refused(log: ToolAuditLog, limit: int) -> None:
    with pytest.raises(InvalidRequest, match="between 1 and 100"):
        log.recent(admin_of("docs"), limit=limit, cursor=None)


# --- the route -------------------------------------------------------------------------------------------------


@dataclass
class Wired:
    """The composition root as the route uses it: only its audit log."""

    audit_log: ToolAuditLog


@pytest.fixture
def api(log: ToolAuditLog) -> Iterator[APIGatewayHttpResolver]:
    app = APIGatewayHttpResolver(enable_validation=True)
    register_error_handlers(app)
    app.include_router(audit_route.router)
    with overridden(Wired(log)):
        yield app


def get_audit(app: APIGatewayHttpResolver, query: dict[str, str], *, admin: str | None) -> tuple[int, Any]:
    event = copy.deepcopy(load_event("apigw_http_v2_get_me.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/v1/audit"
    event["rawQueryString"] = "&".join(f"{k}={v}" for k, v in query.items())
    event["queryStringParameters"] = query or None
    if admin is not None:
        event["requestContext"]["authorizer"]["jwt"]["claims"]["custom:admin_collections"] = admin
    response = app.resolve(event, CONTEXT)
    return response["statusCode"], json.loads(response["body"])


def test_the_route_shows_an_admin_the_calls_in_camel_case_newest_first(
    api: APIGatewayHttpResolver, log: ToolAuditLog
) -> None:
    log.record(tool_call("acme", collections=("contracts",), at=AT))
    log.record(tool_call("acme", collections=("contracts",), at=AT + timedelta(seconds=1), outcome="forbidden"))
    log.record(tool_call("acme", collections=("handbooks",), tool="elsewhere"))
    status, body = get_audit(api, {"limit": "1"}, admin="contracts")
    assert status == 200
    (first,) = body["calls"]
    assert set(first) == {
        "callId",
        "subject",
        "tool",
        "surface",
        "argumentIds",
        "collectionIds",
        "outcome",
        "durationMs",
        "calledAt",
    }
    assert first["outcome"] == "forbidden" and first["collectionIds"] == ["contracts"]
    assert first["argumentIds"] == {"fileId": "0b8e1c52-7d3f-4f5e-9c1a-3d2b1a0f9e8d"}
    status, body = get_audit(api, {"limit": "1", "cursor": body["nextCursor"]}, admin="contracts")
    assert status == 200
    assert [call["outcome"] for call in body["calls"]] == ["ok"] and body["nextCursor"] is None


def test_the_route_refuses_a_caller_who_administers_nothing_with_403_naming_the_role(
    api: APIGatewayHttpResolver,
) -> None:
    status, body = get_audit(api, {}, admin=None)
    assert status == 403
    assert body["error"] == "forbidden" and "admin role" in body["message"]


@pytest.mark.parametrize(("query", "status"), [({"limit": "0"}, 422), ({"limit": "101"}, 422), ({"cursor": "x"}, 400)])
def test_the_route_refuses_a_limit_or_cursor_out_of_its_bounds(
    api: APIGatewayHttpResolver, query: dict[str, str], status: int
) -> None:
    assert get_audit(api, query, admin="contracts")[0] == status
