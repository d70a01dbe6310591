"""The sample events in events/ are valid for the models the handlers parse them with."""

from aws_lambda_powertools.utilities.parser.models import (
    APIGatewayProxyEventV2Model,
    EventBridgeModel,
    S3EventNotificationEventBridgeModel,
)

from shared.domain.workflow import ProcessVersion
from shared.services.pipeline import caught_error_message
from tests.conftest import load_event


def test_object_created_event_is_an_s3_eventbridge_notification() -> None:
    event = S3EventNotificationEventBridgeModel.model_validate(load_event("s3_object_created.json"))
    assert event.detail_type == "Object Created"
    assert event.detail.object.key.startswith("tenants/acme/")
    assert event.detail.object.version_id


def test_http_api_event_carries_jwt_claims() -> None:
    event = APIGatewayProxyEventV2Model.model_validate(load_event("apigw_http_v2_get_me.json"))
    assert event.requestContext.authorizer is not None
    assert event.requestContext.authorizer.jwt is not None
    assert event.requestContext.authorizer.jwt.claims["custom:tenant_id"] == "acme"


def test_scheduled_event_is_an_eventbridge_event() -> None:
    event = EventBridgeModel.model_validate(load_event("scheduled_reconcile.json"))
    assert event.detail_type == "Scheduled Event"
    assert event.source == "aws.events"


def test_a_map_item_carries_the_version_references_and_its_batch() -> None:
    event = load_event("pipeline_embed_batch.json")
    request = ProcessVersion.from_step_input(event)
    assert (request.tenant_id, request.attempt, event["batch"]) == ("acme", 1, 3)


def test_a_caught_failure_carries_the_step_and_lambdas_error_as_step_functions_passes_it() -> None:
    event = load_event("pipeline_record_failure.json")
    assert ProcessVersion.from_step_input(event).attempt == 2
    assert event["failedStep"] == "extract" and event["error"]["Error"] == "InfrastructureUnavailable"
    # The cause is Lambda's error document as a string; what is recorded is its message, not its stack trace.
    assert caught_error_message(event["error"]["Cause"]).startswith("OperationalError: connection to server")
    assert "stackTrace" not in caught_error_message(event["error"]["Cause"])
    assert caught_error_message("not json at all") == "not json at all"
