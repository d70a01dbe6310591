"""The sample events in events/ are valid for the models the handlers parse them with."""

from aws_lambda_powertools.utilities.parser.models import (
    APIGatewayProxyEventV2Model,
    EventBridgeModel,
    S3EventNotificationEventBridgeModel,
)

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
