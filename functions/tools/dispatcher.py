"""One dispatcher for both tool surfaces (MCP at /mcp, and GET/POST /v1/tools): the arguments validated against the
tool's parameter model, the call made for the caller's tenant, every refusal turned into a result the model can
read (what was wrong, what to call instead), and the call recorded in the tenant's audit."""

import functools
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from functions.tools.catalog import TOOLS, TOOLS_BY_NAME
from functions.tools.models import Refusal
from functions.tools.registry import DispatchedServices, Tool, ToolContext
from shared.bootstrap import acting_for_tenant, infrastructure_outage
from shared.domain.artifacts import VersionConflict
from shared.domain.audit import ToolCall, id_arguments
from shared.domain.auth import Principal
from shared.domain.errors import (
    INFRASTRUCTURE_UNAVAILABLE_SENTENCE,
    RETRY_AFTER_OUTAGE_SECONDS,
    CapabilityUnavailable,
    DocumentNotReady,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    NotReady,
    QuireError,
    VersionDeleted,
)
from shared.domain.exports import RenderFailed
from shared.domain.fencing import Fence
from shared.observability import logger

Surface = Literal["mcp", "http"]
# One sentence for "does not exist" and "not yours", as the HTTP API's 404: a refusal never confirms an id.
MAX_SUBJECT_CHARS = 255
_NOT_TEXT = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
NOT_FOUND = (
    "Not found: nothing with this id is visible to this caller (it does not exist, or it is in a collection the"
    " token does not grant). list_files and search_files show what is."
)


class UnknownTool(LookupError):
    pass


class ToolOutcome(BaseModel):
    model_config = ConfigDict(frozen=True)

    tool: str
    is_error: bool
    # The result (camelCase JSON) or, for a refusal, the refusal.
    content: dict[str, Any]

    def wire(self) -> dict[str, Any]:
        """The body of POST /v1/tools/{name}: the result, or the refusal under `error`."""
        if self.is_error:
            return {"tool": self.tool, "isError": True, "error": self.content}
        return {"tool": self.tool, "isError": False, "result": self.content}


class ToolDispatcher:
    def __init__(self, services: DispatchedServices) -> None:
        self._services = services

    @staticmethod
    def tools() -> tuple[Tool[Any, Any], ...]:
        return tuple(TOOLS)

    @staticmethod
    def tool(name: str) -> Tool[Any, Any]:
        try:
            return TOOLS_BY_NAME[name]
        except KeyError:
            raise UnknownTool(name) from None

    def call(
        self, principal: Principal, name: str, arguments: Mapping[str, Any] | None, *, surface: Surface
    ) -> ToolOutcome:
        """The tool's result or its refusal. Requests are counted against the tenant's rate by each surface (the
        API's middleware, the MCP server's), once per HTTP request."""
        tool = self.tool(name)
        started = time.monotonic()
        context = ToolContext(principal=principal, services=self._services, fence=Fence.new())
        with acting_for_tenant(principal.tenant_id):
            outcome = self._run(tool, context, arguments)
            self._audit(
                principal,
                tool=name,
                surface=surface,
                argument_ids=id_arguments(arguments or {}, _id_parameters(tool)),
                # Whatever the outcome: the collections the call was authorized in (none when it never was).
                touched=context.touched,
                outcome=str(outcome.content["error"]) if outcome.is_error else "ok",
                started=started,
            )
        return outcome

    @staticmethod
    def _run(tool: Tool[Any, Any], context: ToolContext, arguments: Mapping[str, Any] | None) -> ToolOutcome:
        try:
            params = tool.parameters.model_validate(dict(arguments or {}))
        except ValidationError as error:
            return ToolOutcome(tool=tool.name, is_error=True, content=_dumped(invalid_arguments(error)))
        try:
            result = tool.run(context, params)
            content = fence_supplied_text(result.model_dump(mode="json", by_alias=True), context.fence)
            if "untrusted" in content:
                content["untrusted"] = context.fence.notice
            return ToolOutcome(tool=tool.name, is_error=False, content=content)
        except Exception as error:  # every failure becomes a result the model can read
            refusal = refusal_for(error)
            if refusal.error == "internal_error":
                logger.exception("tool failed", extra={"tool": tool.name})
            elif refusal.error == "unavailable":
                logger.warning("tool's infrastructure did not answer", extra={"tool": tool.name, "error": repr(error)})
            return ToolOutcome(tool=tool.name, is_error=True, content=_dumped(refusal))

    def _audit(
        self,
        principal: Principal,
        *,
        tool: str,
        surface: Surface,
        argument_ids: dict[str, str],
        touched: set[str],
        outcome: str,
        started: float,
    ) -> None:
        try:
            call = ToolCall(
                tenant_id=principal.tenant_id,
                subject=_NOT_TEXT.sub("\ufffd", principal.subject)[:MAX_SUBJECT_CHARS],
                tool=tool,
                surface=surface,
                argument_ids=argument_ids,
                collection_ids=tuple(sorted(touched)),
                outcome=outcome,
                duration_ms=round((time.monotonic() - started) * 1000),
                called_at=datetime.now(UTC),
            )
        except ValidationError:
            # A principal the record cannot hold (no identity provider of ours issues one): logged, answer kept.
            logger.exception("a tool call could not be recorded", extra={"auditWriteFailed": True, "tool": tool})
            return
        # A failed write is logged with the whole record and counted; the call already ran, so its answer stands.
        self._services.audit_log.record(call)


def _dumped(refusal: Refusal) -> dict[str, Any]:
    return refusal.model_dump(mode="json", by_alias=True)


# Strings an uploader or a document chose that travel in a result's structure rather than in its fenced content:
# each is fenced where it stands (a filename, a sheet's or a shape's name, an extraction warning naming them).
SUPPLIED_TEXT_FIELDS = frozenset({"filename", "sheet", "shape"})
SUPPLIED_TEXT_LISTS = frozenset({"warnings"})
# A file's metadata (issue 33): every string value, and every string of a list, is the product's text.
SUPPLIED_TEXT_MAPS = frozenset({"metadata"})


def fence_supplied_text(content: Any, fence: Fence) -> Any:
    """`content` with every SUPPLIED_TEXT_FIELDS string (and SUPPLIED_TEXT_LISTS item) fenced, at any depth."""
    if isinstance(content, dict):
        fenced: dict[str, Any] = {}
        for key, value in content.items():
            if key in SUPPLIED_TEXT_FIELDS and isinstance(value, str):
                fenced[key] = fence.wrap(value)
            elif key in SUPPLIED_TEXT_LISTS and isinstance(value, list):
                fenced[key] = [fence.wrap(item) if isinstance(item, str) else item for item in value]
            elif key in SUPPLIED_TEXT_MAPS and isinstance(value, dict):
                fenced[key] = {name: _fenced_value(item, fence) for name, item in value.items()}
            else:
                fenced[key] = fence_supplied_text(value, fence)
        return fenced
    if isinstance(content, list):
        return [fence_supplied_text(item, fence) for item in content]
    return content


def _fenced_value(value: Any, fence: Fence) -> Any:
    if isinstance(value, str):
        return fence.wrap(value)
    if isinstance(value, list):
        return [fence.wrap(item) if isinstance(item, str) else item for item in value]
    return value


def _id_parameters(tool: Tool[Any, Any]) -> tuple[str, ...]:
    """The tool's id-valued parameters (fileId, versionId, artifactId, collectionId, …): never free text."""
    parameters: type[BaseModel] = tool.parameters
    return _id_fields(parameters)


@functools.cache
def _id_fields(parameters: type[BaseModel]) -> tuple[str, ...]:
    # Once per parameter model: every call's audit reads them.
    return tuple(
        name for name in (field.alias or key for key, field in parameters.model_fields.items()) if name.endswith("Id")
    )


# The tool to call instead, by error code, where one would help.
NEXT_TOOL = {
    "not_found": "list_files",
    "deleted": "list_files",
    "not_ready": "get_file_processing_status",
    "unsupported_media_type": "extract_text",
    "not_an_image": "extract_text",
    "nothing_to_compare": "list_files",
    "version_conflict": "update_artifact",
}


def invalid_arguments(error: ValidationError) -> Refusal:
    """Arguments that do not fit the tool's schema (the HTTP API's 422)."""
    problems = "; ".join(
        f"{'.'.join(str(part) for part in problem['loc']) or 'arguments'}: {problem['msg']}"
        for problem in error.errors()[:10]
    )
    return Refusal(error="invalid_arguments", message=f"the arguments do not fit this tool's schema: {problems}")


def refusal_for(error: Exception) -> Refusal:  # noqa: PLR0911 - one answer per kind of refusal
    """The result a model reads for a failed call: the code the HTTP route's body carries (shared/domain/errors.py),
    with the tool to call instead. The one word the tools spell their own way: a request the service refuses is
    `invalid_arguments` (a tool's request is its arguments), as is one that does not fit the schema."""
    match error:
        case ValidationError():
            return invalid_arguments(error)
        case VersionDeleted():
            return Refusal(error=error.code, message=str(error), next_tool=NEXT_TOOL[error.code])
        case NotFound():
            # One sentence for "does not exist" and "not yours", as the HTTP API's 404: never confirms an id.
            return Refusal(error=error.code, message=NOT_FOUND, next_tool=NEXT_TOOL[error.code])
        case VersionConflict():
            return Refusal(
                error=error.code,
                message=f"{error}: read the latest version, then call update_artifact again with"
                f" expectedLatestVersion={error.latest_version}",
                next_tool=NEXT_TOOL[error.code],
                latest_version=error.latest_version,
            )
        case DocumentNotReady():
            return Refusal(
                error=error.code,
                message=str(error),
                next_tool="get_file_processing_status" if error.retryable else None,
                retryable=error.retryable,
            )
        case NotReady():
            return Refusal(error=error.code, message=str(error), next_tool=NEXT_TOOL[error.code], retryable=True)
        case LimitExceeded():
            return Refusal(
                error=error.code,
                message=str(error),
                retryable=True,
                retry_after_seconds=error.retry_after_seconds,
            )
        case CapabilityUnavailable():
            return Refusal(error=error.code, message=error.reason, capability=error.capability)
        case RenderFailed():
            return Refusal(error=error.code, message=error.sentence, retryable=error.retryable)
        case InvalidRequest() if error.code == InvalidRequest.code:
            return Refusal(error="invalid_arguments", message=str(error))
        case QuireError() if error.code != QuireError.code:
            return Refusal(error=error.code, message=str(error), next_tool=NEXT_TOOL.get(error.code))
    if infrastructure_outage(error):  # the HTTP route's 503 `unavailable`, with its Retry-After
        return Refusal(
            error="unavailable",
            message=INFRASTRUCTURE_UNAVAILABLE_SENTENCE,
            retryable=True,
            retry_after_seconds=RETRY_AFTER_OUTAGE_SECONDS,
        )
    return Refusal(
        error="internal_error",
        message="the tool failed on Quire's side (it is logged); try again shortly",
        retryable=True,
    )
