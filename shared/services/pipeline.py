"""The ingestion pipeline's steps: inspect, extract, index (chunk, embed, swap the chunks).

Each step takes references (tenant, file, version) and returns references: the same code runs as
Step Functions tasks on AWS and in process locally. A document problem ends the step normally with
the failure recorded on the version; only an infrastructure failure raises (and is retried).
"""

from typing import Any
from uuid import UUID

from shared.domain.document import ExtractedDocument, ExtractionFailure
from shared.domain.files import (
    ExtractionSummary,
    FailureReason,
    FileRecord,
    FileVersionRecord,
    ProcessingState,
    VersionState,
)
from shared.domain.knowledge import IndexWrite
from shared.domain.uploads import document_key
from shared.domain.workflow import ProcessVersion
from shared.observability import logger
from shared.ports import FileContentStore, FileMetadataStore
from shared.services.extraction import Extractor
from shared.services.indexing import Indexer, IndexOutcome, IndexTarget, UnindexableDocument

MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


class IngestionPipeline:
    def __init__(
        self, metadata: FileMetadataStore, content: FileContentStore, extractor: Extractor, indexer: Indexer
    ) -> None:
        self._metadata = metadata
        self._content = content
        self._extractor = extractor
        self._indexer = indexer

    def run(self, request: ProcessVersion) -> dict[str, Any]:
        """Every step in order (the local runner; Step Functions calls them one by one)."""
        inspected = self.inspect(request)
        if not inspected["proceed"]:
            return inspected
        extracted = self.extract(request)
        if not extracted["proceed"]:
            return extracted
        return self.index(request)

    def inspect(self, request: ProcessVersion) -> dict[str, Any]:
        version = self._version(request)
        if version is None or version.state is not VersionState.STORED:
            # Deleted or never stored since it was queued: nothing to process, and nothing wrong.
            return {**_reference(request), "proceed": False, "why": "the version is not stored"}
        # Claimed for this attempt only: a superseded attempt, or a version already processed, stops here.
        started = self._metadata.move_processing(
            request.tenant_id,
            version.version_id,
            attempt=request.attempt,
            to=ProcessingState.EXTRACTING,
            expected=[ProcessingState.QUEUED],
        )
        if not started:
            return {**_reference(request), "proceed": False, "why": f"processing is {version.processing_state.value}"}
        return {**_reference(request), "proceed": True, "mediaType": version.media_type, "byteSize": version.byte_size}

    def extract(self, request: ProcessVersion) -> dict[str, Any]:
        version = self._version(request)
        if version is None or version.state is not VersionState.STORED:
            return {**_reference(request), "proceed": False, "why": "the version is not stored"}
        if version.processing_state is not ProcessingState.EXTRACTING or version.processing_attempt != request.attempt:
            # Not claimed by this attempt (inspect did not run, or another attempt superseded it).
            return {**_reference(request), "proceed": False, "why": "this attempt does not hold the version"}
        if not self._extractor.supports(version.media_type):
            return self._fail(
                request, version, FailureReason.UNSUPPORTED_TYPE, f"{version.media_type} is not extracted"
            )
        try:
            content = self._content.get(
                version.storage_key, version_id=version.storage_version_id, max_bytes=self._extractor.max_bytes
            )
        except ValueError as error:
            return self._fail(request, version, FailureReason.TOO_LARGE, str(error))
        outcome = self._extractor.extract(content, version.media_type)
        if isinstance(outcome, ExtractionFailure):
            return self._fail(request, version, outcome.reason, outcome.detail)
        return self._store(request, version, outcome)

    def _store(
        self, request: ProcessVersion, version: FileVersionRecord, document: ExtractedDocument
    ) -> dict[str, Any]:
        key = document_key(request.tenant_id, UUID(request.file_id), version.version_id, request.attempt)
        # The document first, then the row that points at it: a crash between leaves an unreferenced
        # derived object that the next run overwrites, never a row pointing at nothing.
        self._content.put(key, document.model_dump_json().encode(), content_type="application/json")
        summary = ExtractionSummary(
            page_count=document.page_count,
            block_count=len(document.blocks),
            pages_without_text=document.pages_without_text,
            warnings=document.warnings,
            truncated=document.truncated,
            document_key=key,
        )
        if not self._metadata.record_extraction(
            request.tenant_id, version.version_id, summary, attempt=request.attempt
        ):
            # Deleted, or superseded, while it was being extracted: the document belongs to nobody.
            self._content.delete_all_versions(key)
            return {**_reference(request), "proceed": False, "why": "the version changed while it was extracted"}
        logger.info("extracted", extra={"blocks": len(document.blocks), "pages": document.page_count})
        return {**_reference(request), "proceed": True, "blocks": len(document.blocks)}

    def _fail(
        self, request: ProcessVersion, version: FileVersionRecord, reason: FailureReason, detail: str
    ) -> dict[str, Any]:
        self._metadata.record_failure(
            request.tenant_id, version.version_id, reason=reason, detail=detail, attempt=request.attempt
        )
        logger.info("extraction failed", extra={"reason": reason.value})
        return {**_reference(request), "proceed": False, "failure": reason.value}

    def index(self, request: ProcessVersion) -> dict[str, Any]:
        found = self._found(request)
        if found is None or found[1].state is not VersionState.STORED:
            return {**_reference(request), "proceed": False, "why": "the version is not stored"}
        file, version = found
        if not self._metadata.move_processing(
            request.tenant_id,
            version.version_id,
            attempt=request.attempt,
            to=ProcessingState.INDEXING,
            expected=[ProcessingState.EXTRACTED],
        ):
            return {**_reference(request), "proceed": False, "why": "this attempt does not hold the version"}
        try:
            written = self.reindex(file, version, attempt=request.attempt).written
        except UnindexableDocument as error:
            return self._fail(request, version, FailureReason.MALFORMED, f"it could not be indexed: {error}")
        if written is not IndexWrite.STORED:
            return {**_reference(request), "proceed": False, "why": f"the chunks were not written ({written.value})"}
        return {**_reference(request), "proceed": True, "indexed": True}

    def reindex(self, file: FileRecord, version: FileVersionRecord, *, attempt: int | None) -> IndexOutcome:
        """Index one extracted version from its stored document (the pipeline's step, and re-indexing)."""
        target = IndexTarget(
            tenant_id=file.tenant_id,
            file_id=file.file_id,
            version_id=version.version_id,
            collection_id=file.collection_id,
            filename=version.filename,
            media_type=version.media_type,
            uploaded_at=version.stored_at or version.created_at,
        )
        return self._indexer.index(target, self.read_document(version), attempt=attempt)

    def _found(self, request: ProcessVersion) -> tuple[FileRecord, FileVersionRecord] | None:
        found = self._metadata.find_version(request.tenant_id, UUID(request.version_id))
        return found if found is not None and str(found[0].file_id) == request.file_id else None

    def _version(self, request: ProcessVersion) -> FileVersionRecord | None:
        found = self._found(request)
        return found[1] if found is not None else None

    def has_document(self, version: FileVersionRecord) -> bool:
        return version.document_key is not None and self._content.head(version.document_key) is not None

    def read_document(self, version: FileVersionRecord) -> ExtractedDocument:
        """The stored document of an extracted version."""
        if version.document_key is None:
            raise ValueError("this version has no extracted document")
        raw = self._content.get(version.document_key, max_bytes=MAX_DOCUMENT_BYTES)
        return ExtractedDocument.model_validate_json(raw)


def _reference(request: ProcessVersion) -> dict[str, Any]:
    return {"tenantId": request.tenant_id, "fileId": request.file_id, "versionId": request.version_id}
