"""ProcessingAttempts over PostgreSQL: a stored version's processing state, moved by its current attempt only."""

from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

from shared.adapters.postgres.file_rows import FileRows
from shared.domain.files import (
    MAX_STALLED_RETRIES,
    MAX_TIMEOUT_RETRIES,
    ExtractionSummary,
    FailureReason,
    ProcessingState,
)
from shared.ports import ProcessingAttempts


def _bounded(detail: str | None) -> str | None:
    return None if detail is None else detail[:2000]


class PostgresProcessingAttempts(FileRows, ProcessingAttempts):
    def queue_processing(self, tenant_id: str, version_id: UUID, *, stale_before: datetime) -> int | None:
        """not_started (or in progress but silent since `stale_before`) → queued, as a new attempt.

        Returns the attempt's number, or None when processing is already under way (or done).
        """
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute(
                "UPDATE file_versions SET processing_state = 'queued', processing_requested_at = now(),"
                " processing_attempt = processing_attempt + 1, updated_at = now(),"
                # A first start is no retry; nor is one whose workflow could not be asked (released back to
                # not_started), which keeps the count it had: an outage must not hand out fresh retries.
                " processing_retries = CASE WHEN processing_state = 'not_started' THEN processing_retries"
                "                           ELSE processing_retries + 1 END,"
                " failure_reason = NULL, failure_detail = NULL"
                " WHERE tenant_id = %s AND version_id = %s AND state = 'stored'"
                " AND (processing_state = 'not_started'"
                "      OR (processing_state IN ('queued', 'extracting', 'recognizing', 'extracted', 'indexing',"
                "                               'interrupted')"
                "          AND updated_at < %s"
                "          AND processing_retries < %s)"
                # A timeout may go differently next time (a busy machine): a few more attempts, then it stays.
                "      OR (processing_state = 'failed' AND failure_reason = 'timed-out' AND processing_retries < %s))"
                " RETURNING processing_attempt",
                (tenant_id, version_id, stale_before, MAX_STALLED_RETRIES, MAX_TIMEOUT_RETRIES),
            ).fetchone()
        return int(row[0]) if row else None

    def queue_rescan(self, tenant_id: str, version_id: UUID) -> int | None:
        """indexed, failed or interrupted → queued, as a new attempt: one statement decides, so two rescans at once
        start one."""
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute(
                "UPDATE file_versions SET processing_state = 'queued', processing_requested_at = now(),"
                " processing_attempt = processing_attempt + 1, processing_retries = 0, updated_at = now(),"
                " failure_reason = NULL, failure_detail = NULL, processing_purpose = 'process'"
                " WHERE tenant_id = %s AND version_id = %s AND state = 'stored'"
                " AND processing_state IN ('indexed', 'failed', 'interrupted') RETURNING processing_attempt",
                (tenant_id, version_id),
            ).fetchone()
        return int(row[0]) if row else None

    def queue_reindex(self, tenant_id: str, version_id: UUID) -> int | None:
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute(
                "UPDATE file_versions SET processing_state = 'queued', processing_requested_at = now(),"
                " processing_attempt = processing_attempt + 1, processing_retries = 0, updated_at = now(),"
                # Ends in reindex.finished, not a second file.version.indexed (migrations/0027_events.sql).
                " processing_purpose = 'reindex'"
                " WHERE tenant_id = %s AND version_id = %s AND state = 'stored' AND processing_state = 'indexed'"
                " RETURNING processing_attempt",
                (tenant_id, version_id),
            ).fetchone()
        return int(row[0]) if row else None

    def release_processing(
        self, tenant_id: str, version_id: UUID, *, attempt: int, back_to: ProcessingState = ProcessingState.NOT_STARTED
    ) -> None:
        """queued → not_started again (or `back_to`: indexed, for a re-index), when the workflow could not even
        be asked (so a redelivery, or the next call, can)."""
        with self._database.tenant_transaction(tenant_id) as conn:
            conn.execute(
                "UPDATE file_versions SET processing_state = %s,"
                " processing_requested_at = CASE WHEN %s = 'not_started' THEN NULL ELSE processing_requested_at END,"
                " updated_at = now() WHERE tenant_id = %s AND version_id = %s AND processing_state = 'queued'"
                " AND processing_attempt = %s",
                (back_to.value, back_to.value, tenant_id, version_id, attempt),
            )

    def move_processing(
        self,
        tenant_id: str,
        version_id: UUID,
        *,
        attempt: int,
        to: ProcessingState,
        expected: Iterable[ProcessingState],
    ) -> bool:
        """Compare-and-set on the processing state of a stored version, for the current attempt only."""
        with self._database.tenant_transaction(tenant_id) as conn:
            changed = conn.execute(
                "UPDATE file_versions SET processing_state = %s, updated_at = now()"
                " WHERE tenant_id = %s AND version_id = %s AND state = 'stored' AND processing_state = ANY(%s)"
                " AND processing_attempt = %s",
                (to.value, tenant_id, version_id, [state.value for state in expected], attempt),
            ).rowcount
        return changed == 1

    def heartbeat(self, tenant_id: str, version_id: UUID, *, attempt: int, state: ProcessingState) -> bool:
        return self.move_processing(tenant_id, version_id, attempt=attempt, to=state, expected=[state])

    def record_content_hash(self, tenant_id: str, version_id: UUID, sha256: str, *, attempt: int) -> bool:
        with self._database.tenant_transaction(tenant_id) as conn:
            changed = conn.execute(
                "UPDATE file_versions SET content_sha256 = %s WHERE tenant_id = %s AND version_id = %s"
                " AND state = 'stored' AND processing_attempt = %s",
                (sha256, tenant_id, version_id, attempt),
            ).rowcount
        return changed == 1

    def record_extraction(
        self,
        tenant_id: str,
        version_id: UUID,
        summary: ExtractionSummary,
        *,
        attempt: int,
        awaiting_recognition: bool = False,
    ) -> bool:
        """extracting (or recognizing) → extracted, or → recognizing while OCR reads the pages without text."""
        recognition = summary.recognition
        target = ProcessingState.RECOGNIZING if awaiting_recognition else ProcessingState.EXTRACTED
        with self._database.tenant_transaction(tenant_id) as conn:
            changed = conn.execute(
                "UPDATE file_versions SET processing_state = %s, page_count = %s, block_count = %s,"
                " pages_without_text = %s, extraction_warnings = %s, extraction_truncated = %s, document_key = %s,"
                " document_version_id = %s,"
                " ocr_state = %s, ocr_engine = %s, ocr_detail = %s, recognized_pages = %s, ocr_confidence = %s,"
                " vision_state = %s, vision_model = %s, vision_detail = %s,"
                " transcription_state = %s, transcription_engine = %s, transcription_detail = %s,"
                " transcription_confidence = %s, transcription_language = %s, duration_seconds = %s,"
                " failure_reason = NULL, failure_detail = NULL, updated_at = now()"
                " WHERE tenant_id = %s AND version_id = %s AND state = 'stored'"
                " AND processing_state IN ('extracting', 'recognizing') AND processing_attempt = %s",
                (
                    target.value,
                    summary.page_count,
                    summary.block_count,
                    list(summary.pages_without_text),
                    list(summary.warnings),
                    summary.truncated,
                    summary.document_key,
                    summary.document_version_id,
                    recognition.ocr_state,
                    recognition.ocr_engine,
                    _bounded(recognition.ocr_detail),
                    list(recognition.recognized_pages),
                    recognition.ocr_confidence,
                    recognition.vision_state,
                    recognition.vision_model,
                    _bounded(recognition.vision_detail),
                    recognition.transcription_state,
                    recognition.transcription_engine,
                    _bounded(recognition.transcription_detail),
                    recognition.transcription_confidence,
                    recognition.transcription_language,
                    recognition.duration_seconds,
                    tenant_id,
                    version_id,
                    attempt,
                ),
            ).rowcount
        return changed == 1

    def record_failure(
        self, tenant_id: str, version_id: UUID, *, reason: FailureReason, detail: str, attempt: int
    ) -> bool:
        """A document problem: processing ends `failed` with the reason (its sentence is shown to the owner)."""
        with self._database.tenant_transaction(tenant_id) as conn:
            changed = conn.execute(
                "UPDATE file_versions SET processing_state = 'failed', failure_reason = %s, failure_detail = %s,"
                " updated_at = now() WHERE tenant_id = %s AND version_id = %s AND state = 'stored'"
                " AND processing_state IN ('queued', 'extracting', 'recognizing', 'indexing')"
                " AND processing_attempt = %s",
                (reason.value, detail[:2000], tenant_id, version_id, attempt),
            ).rowcount
        return changed == 1

    def record_interruption(self, tenant_id: str, version_id: UUID, *, detail: str, attempt: int) -> bool:
        """An infrastructure failure ended this attempt: `interrupted`, with what failed, for the sweep to retry."""
        with self._database.tenant_transaction(tenant_id) as conn:
            changed = conn.execute(
                "UPDATE file_versions SET processing_state = 'interrupted', failure_reason = NULL,"
                " failure_detail = %s, updated_at = now() WHERE tenant_id = %s AND version_id = %s"
                " AND state = 'stored' AND processing_attempt = %s"
                " AND processing_state IN ('queued', 'extracting', 'recognizing', 'extracted', 'indexing')",
                (detail[:2000], tenant_id, version_id, attempt),
            ).rowcount
        return changed == 1
