"""Who may do what, and what was done: tokens, entitlement, malware scanning, the tool-call audit and the
usage ledger the daily limits read.

The docstrings are the contracts adapters keep (docs/architecture.md, "Ports and their adapters").
"""

from collections.abc import Mapping
from datetime import datetime
from typing import Protocol
from uuid import UUID

from shared.domain.audit import ToolCall, ToolCallRecord
from shared.domain.auth import Principal
from shared.domain.limits import Spend
from shared.domain.usage import RequestKind, Usage, UsageTotal
from shared.ports.models import CapabilityPort


class TokenVerifier(Protocol):
    """Bearer token → verified claims, in the shape API Gateway's JWT authorizer hands the Lambda.

    On AWS the authorizer does this before the Lambda runs; locally the HTTP adapter calls this port. An adapter
    that never blocks (no signing keys to fetch) may say so with a class attribute `verifies_offline = True`:
    the MCP server then verifies on its event loop instead of handing each token to a worker thread.
    """

    def verify(self, token: str) -> Mapping[str, object]:
        """Return the claims, or raise Unauthenticated (bad signature, expired, wrong issuer/audience)."""
        ...


class AuthorizationPolicy(Protocol):
    """Entitlement: a caller sees a file only through a collection it is entitled to.

    Required by every service that reads tenant content; an unentitled caller must be indistinguishable
    from one asking for something that does not exist.
    """

    def readable_collections(self, principal: Principal) -> frozenset[str]: ...

    def administered_collections(self, principal: Principal) -> frozenset[str]:
        """The collections the principal may administer (a subset of the readable ones)."""
        ...

    def ensure_can_read(self, principal: Principal, collection_id: str) -> None:
        """Raise NotFound (not Forbidden) when the principal may not read the collection."""
        ...

    def ensure_can_write(self, principal: Principal, collection_id: str) -> None:
        """Raise NotFound when the principal may not see the collection at all, Forbidden (naming the role)
        when it may read but not write there. Every write entry point asks this, once."""
        ...

    def ensure_can_administer(self, principal: Principal, collection_id: str) -> None:
        """As ensure_can_write, for the admin role: deleting a collection, approving a replacement,
        re-indexing."""
        ...


class MalwareScanning(CapabilityPort, Protocol):
    """Whether a malware scanner checks every upload before it is processed (GuardDuty Malware Protection for
    S3 on AWS, when the environment turns it on). Its verdicts arrive as events; this port says only whether
    processing must wait for one. Locally there is none, and files are processed unscanned (and say so)."""

    @property
    def gates_processing(self) -> bool: ...


class ToolCallAudit(Protocol):
    """The audit record of agent tool calls, tenant-scoped and RLS-forced: appended, never changed or removed
    (the application role may only INSERT and SELECT)."""

    def record(self, call: ToolCall) -> None:
        """Append the call (its call id is made here); raises when it could not be written."""
        ...

    def recent(
        self,
        tenant_id: str,
        *,
        visible_collections: frozenset[str],
        limit: int,
        before: tuple[datetime, UUID] | None,
    ) -> tuple[list[ToolCallRecord], bool]:
        """The tenant's calls newest first (by called_at, then call_id), from the one after `before`'s keyset:
        only those whose collection_ids all lie within `visible_collections` (a call with none, refused before
        any collection was known, is visible too: it reveals no collection's content). The page, and whether
        more follow."""
        ...


class UsageLedger(Protocol):
    """Metered calls per tenant: one row per (file version, step, attempt), so a step delivered twice
    records once while a real re-run (a new attempt, a rescan) records what it really cost again; and the model
    calls made inside requests, which have no file version, one row per (call, collection)."""

    def record(
        self,
        tenant_id: str,
        file_id: UUID,
        version_id: UUID,
        collection_id: str,
        *,
        step: str,
        attempt: int,
        usage: Usage,
    ) -> bool:
        """True when this call added the row (False: already recorded)."""
        ...

    def record_request(
        self,
        tenant_id: str,
        *,
        kind: RequestKind,
        collections: frozenset[str],
        subject: str,
        usage: Usage,
        usage_id: UUID | None = None,
    ) -> None:
        """A model call made inside a request (no file version: an answer, a tool's summary) by `subject`, its
        tokens shared out over the `collections` it was spent for (shared/domain/usage.py collection_shares).
        With `usage_id` (e.g. the answer's id) a second record of the same call adds nothing; without, one is
        drawn. Raises ValueError for no collection, or pages or images in `usage`."""
        ...

    def totals(
        self, tenant_id: str, collections: frozenset[str], *, since: datetime, until: datetime
    ) -> list[UsageTotal]:
        """Summed per (step, provider, operation, model) over versions of `collections` in [since, until), and
        the request usage booked to `collections` with its kind as the step: a share booked to a collection
        outside `collections` is never counted, and a request counts as one call however many shares it has."""
        ...

    def spent_since(self, tenant_id: str, since: datetime) -> Spend:
        """The tenant's OCR pages, images described and embedding tokens (the input tokens of the embed and
        re-embed steps), and generation tokens (input plus output of request usage), recorded at or after
        `since`, in every collection, priced or not: the daily limits' source of truth."""
        ...

    def ocr_runs_since(self, tenant_id: str, file_id: UUID, since: datetime) -> list[datetime]:
        """When each OCR run of the file's versions recorded at or after `since` was recorded, oldest first."""
        ...
