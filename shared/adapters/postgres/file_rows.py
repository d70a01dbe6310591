"""What the PostgreSQL adapters over `files` and `file_versions` share: the version row and the database.

Every statement runs in a tenant transaction *and* filters by tenant.
"""

from typing import Any

from shared.adapters.postgres.database import Database
from shared.domain.files import FileVersionRecord

VERSION_COLUMNS = (
    "file_id, version_id, state, processing_state, filename, media_type, declared_byte_size, byte_size,"
    " storage_key, storage_version_id, rejection_reason, failure_reason, failure_detail, created_at,"
    " updated_at, stored_at, processing_requested_at, page_count, block_count, pages_without_text,"
    " extraction_warnings, extraction_truncated, document_key, document_version_id, processing_attempt,"
    " processing_retries, chunk_count, embedded_chunk_count, embedding_model, embedding_gap, context_gap,"
    " context_model, indexed_at,"
    " ocr_state, ocr_engine, ocr_detail, recognized_pages, ocr_confidence, vision_state, vision_model, vision_detail,"
    " transcription_state, transcription_engine, transcription_detail, transcription_confidence,"
    " transcription_language, duration_seconds,"
    " export_id, malware_scan, malware_scan_object, declared_language, languages, content_sha256, declared_sha256"
)


def version_of(row: dict[str, Any]) -> FileVersionRecord:
    return FileVersionRecord.model_validate({k: v for k, v in row.items() if k != "file_id"})


class FileRows:
    """An adapter over the file rows, built on the application's database."""

    def __init__(self, database: Database) -> None:
        self._database = database
