"""The audit of agent tool calls: each call recorded as it ends, and read back by the collections' admins.

A failed write is logged and counted, not raised. By the time a call is recorded it has ended: what it did
(an artifact written, an export started) is done, and refusing its result would not undo it, only make the
agent retry and do it twice. Nor is the record lost silently: the log line is an error carrying the whole call
(ids only, like the row: nothing a log may not hold), so the record can be rebuilt from the log, and
`failed_writes` counts them for the process's own health. No metric is published here: an embedded-metric
document goes to stdout, which the MCP stdio transport owns; a CloudWatch metric filter on the log line's
`auditWriteFailed` key counts them on AWS.
"""

import base64
import binascii
import json
import threading
from datetime import datetime
from uuid import UUID

from shared.domain.audit import ToolCall, ToolCallPage, ToolCallRecord
from shared.domain.auth import Principal
from shared.domain.errors import Forbidden, InvalidRequest
from shared.observability import logger
from shared.ports import AuthorizationPolicy, ToolCallAudit

MAX_AUDIT_PAGE = 100
# A real cursor is about 100 characters (a timestamp and a UUID).
MAX_CURSOR_CHARS = 200
NEEDS_ADMIN = (
    "the audit of tool calls needs the admin role in a collection; this token administers none:"
    " ask the tenant's administrator for the admin role"
)
_NOT_OURS = "cursor is not one this API returned"


def encode_cursor(record: ToolCallRecord) -> str:
    raw = json.dumps([record.called_at.isoformat(), str(record.call_id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    if len(cursor) > MAX_CURSOR_CHARS:
        raise InvalidRequest(_NOT_OURS)
    try:
        called_at, call_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(called_at, str) or not isinstance(call_id, str):
            raise TypeError("cursor fields are not strings")
        at = datetime.fromisoformat(called_at)
        if at.tzinfo is None:
            # A time without a zone would be read in the session's: not a place this API ever pointed at.
            raise ValueError("cursor time has no zone")
        return at, UUID(call_id)
    except (ValueError, TypeError, AttributeError, RecursionError, binascii.Error) as error:
        raise InvalidRequest(_NOT_OURS) from error


class ToolAuditLog:
    def __init__(self, audit: ToolCallAudit, policy: AuthorizationPolicy) -> None:
        self._audit = audit
        self._policy = policy
        self._failed_writes = 0
        self._lock = threading.Lock()

    @property
    def failed_writes(self) -> int:
        """Calls this process could not write to the audit (each logged with the whole call)."""
        with self._lock:
            return self._failed_writes

    def record(self, call: ToolCall) -> bool:
        """Append the call; True when it was written. A failure is logged with the call and counted, never
        raised: the tool's result is still returned (the module's docstring says why)."""
        try:
            self._audit.record(call)
        except Exception:
            with self._lock:
                self._failed_writes += 1
            logger.exception(
                "tool call not written to the audit",
                extra={"auditWriteFailed": True, "toolCall": call.model_dump(mode="json")},
            )
            return False
        return True

    def recent(self, principal: Principal, *, limit: int, cursor: str | None) -> ToolCallPage:
        """The tenant's tool calls newest first, for an admin: those that acted only in collections the caller
        administers, and those refused before any collection was known. Forbidden (naming the admin role)
        for a caller who administers none."""
        administered = self._policy.administered_collections(principal)
        if not administered:
            raise Forbidden(NEEDS_ADMIN)
        if not 1 <= limit <= MAX_AUDIT_PAGE:
            raise InvalidRequest(f"limit must be between 1 and {MAX_AUDIT_PAGE}")
        calls, more = self._audit.recent(
            principal.tenant_id,
            visible_collections=administered,
            limit=limit,
            before=decode_cursor(cursor) if cursor else None,
        )
        return ToolCallPage(calls=tuple(calls), next_cursor=encode_cursor(calls[-1]) if more and calls else None)
