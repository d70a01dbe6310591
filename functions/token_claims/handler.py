"""Cognito pre-token-generation trigger (event version 2): the caller's tenant, collections and roles into the
access token.

API Gateway's JWT authorizer verifies the access token and hands its claims to the API function, which reads
them with shared.domain.auth. Cognito puts custom attributes into ID tokens only, so this trigger copies them
into the access token under the same names (a custom attribute is `custom:<name>`, the very claim name the
API reads). Wiring only: no database, no VPC, no AWS call; it runs while a user waits for a sign-in.

Collections travel as one string, sorted and comma-separated: the shape of the Cognito attribute an operator
writes and of the locally signed tokens, delivered by API Gateway unchanged (an array claim would arrive
flattened to "[a b]").
"""

import sys
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.logging import Logger
from aws_lambda_powertools.utilities.data_classes import event_source
from aws_lambda_powertools.utilities.data_classes.cognito_user_pool_event import PreTokenGenerationV2TriggerEvent
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.domain.auth import (
    ADMIN_CLAIM,
    COLLECTIONS_CLAIM,
    SUBJECT_CLAIM,
    TENANT_CLAIM,
    WRITE_CLAIM,
    Principal,
    parse_collections,
)
from shared.domain.errors import Unauthenticated

# Not shared.observability's: its tracer imports the X-Ray SDK (a quarter of a second) on every cold sign-in.
# The service name comes from POWERTOOLS_SERVICE_NAME, as for every function.
logger = Logger(stream=sys.stderr)


class AccountNotProvisioned(Exception):
    """No token for this user: Cognito fails the sign-in and shows the message ("PreTokenGeneration failed
    with error ...")."""


def access_token_claims(user_attributes: Mapping[str, str]) -> dict[str, str]:
    """The claims the API needs, checked as the API will check them; a user it would refuse gets no token."""
    tenant = user_attributes.get(TENANT_CLAIM, "")
    if not tenant:
        raise AccountNotProvisioned("this account belongs to no tenant yet: an operator must provision it")
    try:
        principal = Principal(
            tenant_id=tenant,
            subject=user_attributes.get(SUBJECT_CLAIM, ""),
            collections=parse_collections(user_attributes.get(COLLECTIONS_CLAIM)),
            writable=parse_collections(user_attributes.get(WRITE_CLAIM)),
            administered=parse_collections(user_attributes.get(ADMIN_CLAIM)),
        )
    except (ValueError, Unauthenticated) as error:
        # The details go to the log for the operator; the person signing in gets one sentence.
        logger.warning("user attributes the API would refuse", extra={"problem": str(error)})
        raise AccountNotProvisioned(
            "this account's tenant or collections are not valid identifiers: an operator must correct them"
        ) from None
    claims = {TENANT_CLAIM: principal.tenant_id}
    # No collections, no claim: the API reads an absent claim as no collections, an absent role claim as
    # no role (read only). Each list is the closure (an admin collection is also writable and readable), so
    # the token says in full what the API will allow.
    for claim, collections in (
        (COLLECTIONS_CLAIM, principal.collections),
        (WRITE_CLAIM, principal.writable),
        (ADMIN_CLAIM, principal.administered),
    ):
        if collections:
            claims[claim] = ",".join(sorted(collections))
    return claims


@logger.inject_lambda_context
@event_source(data_class=PreTokenGenerationV2TriggerEvent)
def handler(event: PreTokenGenerationV2TriggerEvent, context: LambdaContext) -> dict[str, Any]:
    try:
        claims = access_token_claims(event.request.user_attributes)
    except AccountNotProvisioned as refusal:
        logger.warning("token refused", extra={"reason": str(refusal), "trigger_source": event.trigger_source})
        raise
    event.response.claims_scope_override_details.access_token_generation.claims_to_add_or_override = claims
    return event.raw_event
