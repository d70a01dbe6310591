"""What the API accepts, for clients that would otherwise copy it (the console names an untyped file's media
type from its extension with this list)."""

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.routes.context import current_principal
from functions.views.meta import MetaView

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


@router.get("/v1/meta")
def meta() -> MetaView:
    """The upload types the API accepts: no tenant data, but a signed-in caller's like every route the console
    calls after sign-in (401 without a token)."""
    current_principal(router)
    return MetaView.current()
