"""GET /v1/meta: the upload types the API accepts, served from the list the upload route checks against."""

import copy
import json
from typing import Any

import pytest

from shared.domain.uploads import ACCEPTED_TYPES, accepted_type
from shared.local.http_api import LocalLambdaContext
from tests.conftest import load_event


@pytest.fixture
def api() -> Any:
    from functions.api import handler

    return handler


def meta_event() -> dict[str, Any]:
    event = copy.deepcopy(load_event("apigw_http_v2_get_me.json"))
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/v1/meta"
    return event


def test_meta_lists_every_accepted_type_with_its_extensions(api: Any) -> None:
    response = api.handler(meta_event(), LocalLambdaContext())
    assert response["statusCode"] == 200
    listed = json.loads(response["body"])["acceptedTypes"]
    assert listed == [
        {"mediaType": accepted.media_type, "extensions": list(accepted.extensions), "kind": accepted.kind}
        for accepted in ACCEPTED_TYPES
    ]
    # What a client names from this list, the upload route accepts: each extension with its media type.
    for entry in listed:
        for extension in entry["extensions"]:
            assert accepted_type(entry["mediaType"], f"notes{extension}").media_type == entry["mediaType"]
    markdown = next(entry for entry in listed if entry["mediaType"] == "text/markdown")
    assert ".markdown" in markdown["extensions"]


def test_meta_needs_a_signed_in_caller(api: Any) -> None:
    event = meta_event()
    del event["requestContext"]["authorizer"]
    response = api.handler(event, LocalLambdaContext())
    assert (response["statusCode"], json.loads(response["body"])) == (401, {"message": "Unauthorized"})


def test_meta_is_in_the_openapi_document(api: Any) -> None:
    event = meta_event()
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/v1/openapi.json"
    document = json.loads(api.handler(event, LocalLambdaContext())["body"])
    schema = document["paths"]["/v1/meta"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema["$ref"].endswith("MetaView")
