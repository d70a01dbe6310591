"""Metered calls (OCR, vision, embeddings) written to the usage ledger, per version, step and attempt."""

from shared.domain.files import FileRecord, FileVersionRecord
from shared.domain.usage import Usage
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
