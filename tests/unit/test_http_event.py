"""The local HTTP adapter plays API Gateway: event shape, JWT gate, payload limit."""

import base64
import json
from typing import Any

import pytest
from aws_lambda_powertools.utilities.parser.models import APIGatewayProxyEventV2Model

from shared.adapters.local.jwt_tokens import LocalTokenIssuer, LocalTokenVerifier
from shared.domain.auth import Principal
from shared.local.http_api import MAX_REQUEST_BYTES, LocalHttpApi, body_refusal, build_http_v2_event

SECRET = b"s" * 32


def test_a_real_request_becomes_a_valid_payload_2_event() -> None:
    event = build_http_v2_event(
        method="POST",
        target="/v1/search?q=alpha&q=beta&limit=5",
        headers=[("Content-Type", "application/json"), ("Cookie", "a=1; b=2"), ("X-Trace", "t"), ("x-trace", "u")],
        body=b'{"query": "x"}',
        source_ip="127.0.0.1",
        claims={"sub": "u"},
    )
    parsed = APIGatewayProxyEventV2Model.model_validate(event)
    assert parsed.rawPath == "/v1/search"
    assert parsed.queryStringParameters == {"q": "alpha,beta", "limit": "5"}
    assert parsed.headers["x-trace"] == "t,u"  # repeated headers are joined, as API Gateway does
    assert parsed.cookies == ["a=1", "b=2"]
    assert event["body"] == '{"query": "x"}' and event["isBase64Encoded"] is False


def test_a_binary_body_is_base64_encoded() -> None:
    raw = bytes(range(256))
    event = build_http_v2_event(
        method="PUT",
        target="/x",
        headers=[("Content-Type", "application/octet-stream")],
        body=raw,
        source_ip="127.0.0.1",
        claims=None,
    )
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == raw
    assert "authorizer" not in event["requestContext"]


class RecordingHandler:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.events.append(event)
        return {"statusCode": 200, "headers": {"content-type": "application/json"}, "body": "{}"}


def make_api(handler: RecordingHandler) -> LocalHttpApi:
    return LocalHttpApi(handler, LocalTokenVerifier(SECRET), public_routes=frozenset({("GET", "/v1/health")}), port=0)


def test_a_protected_route_without_a_token_never_reaches_the_function() -> None:
    handler = RecordingHandler()
    api = make_api(handler)
    status, _, body = api.invoke("GET", "/v1/me", [], b"", "127.0.0.1")
    forged_status, _, _ = api.invoke("GET", "/v1/me", [("Authorization", "Bearer x.y.z")], b"", "127.0.0.1")
    assert (status, json.loads(body)) == (401, {"message": "Unauthorized"})
    assert forged_status == 401
    assert handler.events == []


def test_a_public_route_passes_without_claims_and_a_valid_token_passes_its_claims() -> None:
    handler = RecordingHandler()
    api = make_api(handler)
    token = LocalTokenIssuer(SECRET).issue(Principal(tenant_id="t1", subject="s", collections=frozenset({"c"})))
    assert api.invoke("GET", "/v1/health", [], b"", "127.0.0.1")[0] == 200
    # Header names are case-insensitive.
    assert api.invoke("GET", "/v1/me", [("AUTHORIZATION", f"Bearer {token}")], b"", "127.0.0.1")[0] == 200
    public, protected = handler.events
    assert "authorizer" not in public["requestContext"]
    assert protected["requestContext"]["authorizer"]["jwt"]["claims"]["custom:tenant_id"] == "t1"


@pytest.mark.parametrize(
    ("lengths", "encodings", "status"),
    [
        (["-1"], [], 400),
        (["abc"], [], 400),
        (["²"], [], 400),
        (["10", "20"], [], 400),
        ([], ["chunked"], 411),
        ([str(MAX_REQUEST_BYTES + 1)], [], 413),
    ],
)
def test_request_framing_that_cannot_be_trusted_is_refused(
    lengths: list[str], encodings: list[str], status: int
) -> None:
    refusal = body_refusal(lengths, encodings)
    assert refusal is not None
    assert refusal[0] == status


@pytest.mark.parametrize("lengths", [[], ["0"], ["512"], [str(MAX_REQUEST_BYTES)]])
def test_well_framed_requests_are_read(lengths: list[str]) -> None:
    assert body_refusal(lengths, []) is None
