"""The API handler on sample events, with no database: routes that need none, and the error mapping."""

import copy
import json
from typing import Any

import pytest

from shared.local.http_api import LocalLambdaContext
from tests.conftest import load_event


@pytest.fixture
def api() -> Any:
    from functions.api import handler

    return handler


def call(api: Any, event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = api.handler(event, LocalLambdaContext())
    return response["statusCode"], json.loads(response["body"])


def test_me_reports_the_caller_from_the_authorizer_claims(api: Any) -> None:
    status, body = call(api, load_event("apigw_http_v2_get_me.json"))
    assert status == 200
    assert body == {
        "tenantId": "acme",
        "subject": "8e3f1c2a-1111-4a4a-9b9b-0123456789ab",
        "collections": ["contracts", "handbooks"],
        "roles": {"contracts": "read", "handbooks": "read"},
    }


def test_me_reports_the_role_in_each_collection_the_role_claims_name(api: Any) -> None:
    event = copy.deepcopy(load_event("apigw_http_v2_get_me.json"))
    claims = event["requestContext"]["authorizer"]["jwt"]["claims"]
    claims["custom:write_collections"] = "contracts,drafts"
    claims["custom:admin_collections"] = "drafts"
    status, body = call(api, event)
    assert status == 200
    # A role implies the lower ones: an administered collection is readable without being listed twice.
    assert body["collections"] == ["contracts", "drafts", "handbooks"]
    assert body["roles"] == {"contracts": "write", "drafts": "admin", "handbooks": "read"}


def test_a_request_without_claims_is_unauthorized_with_the_authorizers_body(api: Any) -> None:
    event = copy.deepcopy(load_event("apigw_http_v2_get_me.json"))
    del event["requestContext"]["authorizer"]
    assert call(api, event) == (401, {"message": "Unauthorized"})


def test_an_unknown_route_is_not_found(api: Any) -> None:
    event = copy.deepcopy(load_event("apigw_http_v2_get_me.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/v1/nothing-here"
    assert call(api, event) == (404, {"error": "not_found", "message": "Not found"})


def test_openapi_document_lists_the_routes(api: Any) -> None:
    event = copy.deepcopy(load_event("apigw_http_v2_get_me.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/v1/openapi.json"
    status, body = call(api, event)
    assert status == 200
    assert body["openapi"].startswith("3.")
    assert {
        "/v1/health",
        "/v1/me",
        "/v1/uploads",
        "/v1/files",
        "/v1/files/{file_id}",
        "/v1/files/{file_id}/content",
        "/v1/files/{file_id}/pages/{page}",
        "/v1/files/{file_id}/versions",
        "/v1/collections/{collection_id}/files",
    } <= set(body["paths"])
    # The upload request's schema is generated from the same pydantic model the handler validates with.
    upload = body["paths"]["/v1/uploads"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert upload["$ref"].endswith("UploadRequest")
    # A page image answers a signed GET as JSON, or the PNG itself where the store cannot sign.
    page = body["paths"]["/v1/files/{file_id}/pages/{page}"]["get"]["responses"]["200"]["content"]
    assert page["application/json"]["schema"]["$ref"].endswith("PageImageView") and "image/png" in page


@pytest.mark.parametrize("path", ["/v1/me", "/v1/openapi.json", "/v1/nothing-here"])
def test_every_response_forbids_sniffing_and_caching(api: Any, path: str) -> None:
    event = copy.deepcopy(load_event("apigw_http_v2_get_me.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    headers = api.handler(event, LocalLambdaContext())["headers"]
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    ("method", "path"), [("GET", "/v1/me"), ("POST", "/v1/search"), ("DELETE", "/v1/files/0b8e1c52-7d3f-4f5e")]
)
def test_a_body_that_is_not_utf8_is_a_4xx_not_a_500(api: Any, method: str, path: str) -> None:
    import base64

    event = copy.deepcopy(load_event("apigw_http_v2_get_me.json"))
    event["requestContext"]["http"]["method"] = method
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["routeKey"] = f"{method} {path}"
    event["body"] = base64.b64encode(b'{"query": "caf\xe9"}').decode()  # Latin-1, not UTF-8
    event["isBase64Encoded"] = True
    status, _ = call(api, event)
    assert 400 <= status < 500
