"""A version's extracted document: stored by the extract and recognize steps, read by the chunk step, the
document API, the document tools and re-indexing."""

from typing import TypeVar
from uuid import UUID

from shared.domain.document import MAX_DOCUMENT_BYTES, ExtractedDocument
from shared.domain.files import ExtractionSummary, FailureReason, FileVersionRecord, Recognition, VersionState
from shared.domain.steps import Chunked, Extracted, Halt, Recognized
from shared.domain.uploads import document_key
from shared.domain.workflow import ProcessVersion
from shared.observability import logger
from shared.ports import FileCatalog, FileContentStore, ProcessingAttempts
from shared.services.attempts import AttemptClaims

# The outcome of whichever step stores the document (or records why there is none).
Outcome = TypeVar("Outcome", Extracted, Recognized, Chunked)


class ExtractedDocuments:
    def __init__(self, catalog: FileCatalog, attempts: ProcessingAttempts, content: FileContentStore) -> None:
        self._attempts = attempts
        self._content = content
        self._claims = AttemptClaims(catalog, attempts)

    def read(self, version: FileVersionRecord) -> ExtractedDocument:
        """The stored document of an extracted version."""
        if version.document_key is None:
            raise ValueError("this version has no extracted document")
        raw = self._content.get(version.document_key, max_bytes=MAX_DOCUMENT_BYTES)
        return ExtractedDocument.model_validate_json(raw)

    def exists(self, version: FileVersionRecord) -> bool:
        return version.document_key is not None and self._content.head(version.document_key) is not None

    def store(
        self,
        outcome: type[Outcome],
        request: ProcessVersion,
        version: FileVersionRecord,
        document: ExtractedDocument,
        *,
        recognition: Recognition | None = None,
        awaiting_recognition: bool = False,
    ) -> Outcome:
        """The document, then the row that points at it: a crash between leaves an unreferenced derived object
        that the next run overwrites, never a row pointing at nothing. While OCR is still to read pages
        (`awaiting_recognition`) the text layer is stored under a key of its own."""
        key = document_key(
            request.tenant_id,
            UUID(request.file_id),
            version.version_id,
            request.attempt,
            text_layer=awaiting_recognition,
        )
        stored = self._content.put(key, document.model_dump_json().encode(), content_type="application/json")
        summary = ExtractionSummary(
            page_count=document.page_count,
            block_count=len(document.blocks),
            pages_without_text=document.pages_without_text,
            warnings=document.warnings,
            truncated=document.truncated,
            document_key=key,
            document_version_id=stored.version_id,
            recognition=recognition or Recognition(),
        )
        if not self._attempts.record_extraction(
            request.tenant_id,
            version.version_id,
            summary,
            attempt=request.attempt,
            awaiting_recognition=awaiting_recognition,
        ):
            # Deleted or superseded while it was extracted: the document belongs to nobody, unless this was
            # a second delivery of a step whose first delivery already recorded this very key.
            now = self._claims.find(request)
            recorded_by_twin = (
                now is not None
                and now.version.state is VersionState.STORED
                and now.version.processing_attempt == request.attempt
                and now.version.document_key == key
            )
            if not recorded_by_twin:
                self._forget(key, stored.version_id)
            return outcome.halted(request, Halt.CHANGED_WHILE_EXTRACTED)
        if version.document_key and version.document_key != key:
            # What the row pointed at before (the text layer OCR started from, or an earlier attempt's
            # document): nothing points at it any more.
            self._forget(version.document_key, version.document_version_id)
        logger.info("extracted", extra={"blocks": len(document.blocks), "pages": document.page_count})
        return outcome.going_on(request, blocks=len(document.blocks))

    def fail(
        self,
        outcome: type[Outcome],
        request: ProcessVersion,
        version: FileVersionRecord,
        reason: FailureReason,
        detail: str,
    ) -> Outcome:
        """A document problem, recorded on the version: the attempt ends normally."""
        self._attempts.record_failure(
            request.tenant_id, version.version_id, reason=reason, detail=detail, attempt=request.attempt
        )
        logger.info("extraction failed", extra={"reason": reason.value})
        return outcome.halted(request, None, failure=reason)

    def _forget(self, key: str, version_id: str | None) -> None:
        """Remove the one version of `key` this pipeline wrote (every version, for a row recorded before the
        version was kept on it)."""
        try:
            if version_id is None:
                self._content.delete_all_versions(key)
            else:
                self._content.delete_version(key, version_id)
        except Exception:
            # Reconciliation reports it as a derived object no row points at; nothing depends on it.
            logger.exception("an intermediate document was not removed")
