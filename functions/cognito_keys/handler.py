"""Deploy-time snapshot of the user pool's public signing keys: the on-event handler of a CloudFormation custom
resource (CDK Provider framework). Wiring only.

The MCP function verifies Cognito access tokens itself (its routes have no gateway authorizer) but runs in the
database's isolated subnets, which reach AWS only through VPC endpoints: the pool's JWKS
(`<issuer>/.well-known/jwks.json`) is on Cognito's public endpoint, and a user pool with a domain cannot be
reached through a Cognito VPC endpoint at all. This function runs outside the VPC, at deploy time: Create and
Update read the keys and answer them as the resource's `Jwks` attribute, which becomes the MCP function's
QUIRE_COGNITO_JWKS. Delete does nothing. A pool whose keys cannot be read fails the deployment with the reason.
"""

from typing import Any

from aws_lambda_powertools.utilities.parser import parse
from aws_lambda_powertools.utilities.parser.models import CloudFormationCustomResourceBaseModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import cognito_signing_keys
from shared.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = parse(event=event, model=CloudFormationCustomResourceBaseModel)
    issuer = str(event["ResourceProperties"]["Issuer"])
    if request.request_type == "Delete":
        return {"PhysicalResourceId": event.get("PhysicalResourceId") or issuer}
    keys = cognito_signing_keys(issuer)
    logger.info("signing keys read", extra={"issuer": issuer, "bytes": len(keys)})
    # One snapshot per pool: a replaced pool (another issuer) is a new resource, never an update of this one.
    return {"PhysicalResourceId": issuer, "Data": {"Jwks": keys}}
