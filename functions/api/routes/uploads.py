"""Upload sessions: part URLs, what S3 holds (to resume), completion and abort. `POST /v1/uploads` opens them
(functions/api/routes/files.py)."""

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.routes.context import current_principal, parse_id
from functions.views.uploads import CompleteRequest, PartUrlsRequest, PartUrlsView, PartUrlView, UploadSessionView
from shared.bootstrap import container
from shared.services.upload_sessions import SessionStatus

router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]


@router.post("/v1/uploads/<upload_id>/parts")
def part_urls(upload_id: str, request: PartUrlsRequest) -> PartUrlsView:
    """Presigned URLs for HTTP PUT of these parts (at most 100 a request, each valid at most 15 minutes)."""
    parts = container().upload_sessions.part_uploads(current_principal(router), parse_id(upload_id), request.as_body())
    return PartUrlsView(parts=[PartUrlView.of(part) for part in parts])


@router.get("/v1/uploads/<upload_id>")
def get_upload(upload_id: str) -> UploadSessionView:
    """The session and every part S3 holds: what a client that crashed or reloaded resumes from."""
    return UploadSessionView.of(container().upload_sessions.status(current_principal(router), parse_id(upload_id)))


@router.post("/v1/uploads/<upload_id>/complete")
def complete_upload(upload_id: str, request: CompleteRequest) -> UploadSessionView:
    """Make the file of its parts, once they are exactly the declared file; processing then starts as for a POST."""
    session = container().upload_sessions.complete(
        current_principal(router), parse_id(upload_id), [(part.part_number, part.etag) for part in request.parts]
    )
    return UploadSessionView.of(SessionStatus(session=session, parts=[]))


@router.delete("/v1/uploads/<upload_id>")
def abort_upload(upload_id: str) -> UploadSessionView:
    """Abort the session: its parts are freed and its version rejected, saying so."""
    session = container().upload_sessions.abort(current_principal(router), parse_id(upload_id))
    return UploadSessionView.of(SessionStatus(session=session, parts=[]))
