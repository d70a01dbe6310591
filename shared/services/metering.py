"""Metered calls written to the usage ledger: OCR, vision and embeddings per version, step and attempt; the model
calls made inside a request (answers, summaries) per call and collection."""

from uuid import UUID

from shared.domain.auth import Principal
from shared.domain.files import FileRecord, FileVersionRecord
from shared.domain.usage import RequestKind, Usage
from shared.observability import logger
from shared.ports import UsageLedger


class Metering:
    def __init__(self, ledger: UsageLedger) -> None:
        self._ledger = ledger

    def record(self, file: FileRecord, version: FileVersionRecord, *, step: str, attempt: int, usage: Usage) -> None:
        """Written before the result it paid for is stored; a failure is logged, never raised: an unbilled
        call is a smaller problem than a document the tenant paid for and cannot read."""
        try:
            self._ledger.record(
                file.tenant_id,
                file.file_id,
                version.version_id,
                file.collection_id,
                step=step,
                attempt=attempt,
                usage=usage,
            )
        except Exception:
            logger.exception("usage not recorded", extra={"step": step, "operation": usage.operation})

    def record_request(
        self,
        principal: Principal,
        *,
        kind: RequestKind,
        collections: frozenset[str],
        usage: Usage,
        usage_id: UUID | None = None,
    ) -> None:
        """After the model answered, before its result is returned; a failure is logged, never raised (the
        tokens are spent either way, and the caller's answer is worth more than the ledger row)."""
        try:
            self._ledger.record_request(
                principal.tenant_id,
                kind=kind,
                collections=collections,
                subject=principal.subject,
                usage=usage,
                usage_id=usage_id,
            )
        except Exception:
            logger.exception("request usage not recorded", extra={"kind": kind.value, "operation": usage.operation})
