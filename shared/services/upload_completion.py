"""The last write of the upload order: bytes have landed, so compare-and-set `pending → stored`.

Driven by S3's "Object Created" event, which is a claim about a key: the key must be one Quire handed
out, for a version that exists, and the bytes must be what was declared (size and type) before the
version is stored. Duplicate and out-of-order events do the work at most once.
"""

import json
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from shared.domain.files import FileRecord, FileVersionRecord, MalwareScan, VersionState
from shared.domain.ranged_reads import RangedReader
from shared.domain.sniffing import SNIFF_PREFIX_BYTES, is_archive_type, mismatch
from shared.domain.uploads import accepted_type, parse_storage_key
from shared.domain.workflow import ProcessVersion, StartOutcome
from shared.observability import logger
from shared.ports import FileCatalog, FileContentStore, MalwareScanning, ProcessingAttempts, Workflow
from shared.sandbox import TimedOut, pack, sandboxed
from shared.services import isolated

# The sandboxed read of an Office file's zip directory: a few MB at most, however the archive is made.
SNIFF_TIMEOUT_SECONDS = 60.0
SNIFF_MEMORY_BYTES = 256 * 1024 * 1024


class Completion(StrEnum):
    STORED = "stored"
    REJECTED = "rejected"
    DUPLICATE = "duplicate"
    UNKNOWN_KEY = "unknown_key"
    NOT_PENDING = "not_pending"
    UNEXPECTED_OBJECT_VERSION = "unexpected_object_version"
    DISCARDED = "discarded"


class Verdict(StrEnum):
    """What a malware scanner's verdict did to the version it names."""

    PROCESSING = "processing"  # found clean: processing was asked for
    REJECTED = "rejected"  # found malicious, or not checkable: rejected, its bytes removed
    RECORDED = "recorded"  # recorded on a version whose processing had begun (a verdict repeated)
    NOT_A_LIVE_VERSION = "not_a_live_version"  # an unknown key, another object, a deleted or decided version
    UNKNOWN_STATUS = "unknown_status"  # a status this code does not know: nothing changed


AWAITING_MALWARE_SCAN = "awaiting the malware scan"


class RangedObject(RangedReader):
    """A seekable, read-only view of one stored object version, fetched range by range."""

    def __init__(
        self, content: FileContentStore, key: str, version_id: str | None, size: int, *, budget: int = 16 * 1024 * 1024
    ) -> None:
        super().__init__(size)
        self._content = content
        self._key = key
        self._version_id = version_id
        # However a crafted archive points its parser around, no more than this is ever fetched.
        self._budget = budget

    def _fetch(self, start: int, length: int) -> bytes:
        if length > self._budget:
            raise OSError("reading this archive would fetch more than its sniffing budget")
        self._budget -= length
        return self._content.read_range(self._key, version_id=self._version_id, start=start, length=length)

    def range(self, start: int, length: int) -> bytes:
        """`length` bytes from `start` (fewer at the end), for a reader in the sandbox's child: bounded by the
        object and the budget before anything is allocated, whatever the child asks for."""
        wanted = min(length, self._size - start)
        if wanted <= 0:
            return b""
        if wanted > self._budget:
            raise OSError("reading this archive would fetch more than its sniffing budget")
        self.seek(start)
        return self.read(wanted) or b""


class UploadCompletion:
    def __init__(
        self,
        catalog: FileCatalog,
        attempts: ProcessingAttempts,
        content: FileContentStore,
        workflow: Workflow,
        scanning: MalwareScanning,
        *,
        stale_after: timedelta = timedelta(hours=1),
    ) -> None:
        self._catalog = catalog
        self._attempts = attempts
        self._content = content
        self._workflow = workflow
        self._scanning = scanning
        self._stale_after = stale_after

    def object_created(self, key: str, object_version_id: str | None, size: int) -> Completion:
        found = self._find(key)
        if found is None:
            # Not trusted, not acted on: reported, so a stray or forged object is seen.
            logger.warning("object created for a key Quire did not hand out", extra={"size": size})
            return Completion.UNKNOWN_KEY
        record, version = found
        # Bytes Quire rendered itself (an export) are marked stored by their renderer once they are written.
        if version.state is not VersionState.PENDING or version.export_id is not None:
            return self._already_decided(record, version, object_version_id)
        landed = self._content.head(key, version_id=object_version_id)
        if landed is None:
            # The event outran the object (or it is already gone): nothing to decide; the sweep retries.
            return Completion.NOT_PENDING
        reason = self._refusal(key, object_version_id, landed.byte_size, version)
        if reason is not None:
            changed = self._catalog.mark_rejected(
                record.tenant_id,
                version.version_id,
                reason=reason,
                byte_size=landed.byte_size,
                storage_version_id=object_version_id,
            )
            return Completion.REJECTED if changed else self._decided_meanwhile(key, object_version_id)
        if not self._catalog.mark_stored(
            record.tenant_id, version.version_id, byte_size=landed.byte_size, storage_version_id=object_version_id
        ):
            # Another delivery decided first: this one may be the same object, or a second post.
            return self._decided_meanwhile(key, object_version_id)
        self.request_processing(record.tenant_id, record.file_id, version)
        return Completion.STORED

    def _refusal(self, key: str, object_version_id: str | None, size: int, version: FileVersionRecord) -> str | None:
        """Why the landed object cannot be this version, or None when it is what was declared."""
        if size == 0:
            return f"0 bytes arrived but {version.declared_byte_size} were declared: upload the file again"
        if size > version.declared_byte_size:
            # The policy said at most the declared size, but a store may not enforce its own policy.
            return f"{size} bytes arrived but {version.declared_byte_size} were declared"
        accepted = accepted_type(version.media_type, version.filename)
        prefix = self._content.read_range(key, version_id=object_version_id, start=0, length=SNIFF_PREFIX_BYTES)
        if not is_archive_type(accepted):
            return mismatch(prefix, accepted)
        return self._archive_refusal(key, object_version_id, size, version, prefix)

    def _archive_refusal(
        self, key: str, object_version_id: str | None, size: int, version: FileVersionRecord, prefix: bytes
    ) -> str | None:
        """An Office file is a zip whose directory sits at its end: read through ranged GETs, never whole,
        and parsed (zipfile, the OLE directory) in the sandbox's child, which asks this process for ranges."""
        accepted = accepted_type(version.media_type, version.filename)
        ranged = RangedObject(self._content, key, object_version_id, size)
        header = {"size": size, "media_type": version.media_type, "filename": version.filename}
        # Validated: never trust the shape of what a process that parsed hostile input sends back.
        found = sandboxed(
            isolated.sniff_office_archive,
            pack(header, prefix),
            _mismatch,
            timeout_seconds=SNIFF_TIMEOUT_SECONDS,
            memory_limit_bytes=SNIFF_MEMORY_BYTES,
            max_answer_bytes=64 * 1024,
            ranges=ranged.range,
        )
        unchecked = f"the content could not be checked as {accepted.media_type}"
        match found:
            case TimedOut(seconds=seconds):
                return f"{unchecked}: reading its archive took longer than {seconds:g} seconds; upload it again"
            case None | str():
                return found[:2000] if found else None
            case _:
                # Any other end, or an answer that is not a verdict.
                return f"{unchecked}: its archive could not be read safely; save the file again and upload it"

    def _find(self, key: str) -> tuple[FileRecord, FileVersionRecord] | None:
        parts = parse_storage_key(key)
        if parts is None:
            return None
        found = self._catalog.find_version(parts.tenant_id, parts.version_id)
        if found is None or found[0].file_id != parts.file_id or found[1].storage_key != key:
            return None
        return found

    def _already_decided(
        self, record: FileRecord, version: FileVersionRecord, object_version_id: str | None
    ) -> Completion:
        unwanted = version.state in (VersionState.DELETING, VersionState.DELETED) or (
            # Rejected without ever receiving bytes: its upload URL had expired (see reconciliation).
            version.state is VersionState.REJECTED and version.storage_version_id is None
        )
        if unwanted and object_version_id:
            # The version was deleted, or given up on, while these bytes were on the way: not suspicious.
            self._content.delete_version(version.storage_key, object_version_id)
            return Completion.DISCARDED
        if version.state is VersionState.STORED and version.storage_version_id == object_version_id:
            # A redelivery. If the first delivery died between storing and asking for processing, ask now.
            if version.processing_requested_at is None:
                self.request_processing(record.tenant_id, record.file_id, version)
            return Completion.DUPLICATE
        if version.storage_version_id is not None and version.storage_version_id != object_version_id:
            # A second object under a key already decided (the upload form was posted again before it
            # expired). The row proves which object is the file; the newcomer would otherwise become the
            # current version and push the original towards noncurrent-version expiry.
            logger.warning("a second object arrived under a decided key", extra={"state": version.state.value})
            if object_version_id:
                self._content.delete_version(version.storage_key, object_version_id)
            return Completion.UNEXPECTED_OBJECT_VERSION
        return Completion.NOT_PENDING

    def _decided_meanwhile(self, key: str, object_version_id: str | None) -> Completion:
        found = self._find(key)
        if found is None:
            return Completion.UNKNOWN_KEY
        return self._already_decided(found[0], found[1], object_version_id)

    def record_malware_verdict(self, *, storage_key: str, version_id: str | None, status: str) -> Verdict:
        """The scanner's verdict on the object at `storage_key` (object version `version_id`): clean starts
        processing; anything else rejects the version (reason `malware: …`) and removes its bytes."""
        try:
            verdict = MalwareScan(status)
        except ValueError:
            logger.error("a malware verdict with an unknown status; nothing changed", extra={"status": status})
            return Verdict.UNKNOWN_STATUS
        found = self._find(storage_key)
        if found is None:
            logger.warning("a malware verdict for a key Quire did not hand out", extra={"status": status})
            return Verdict.NOT_A_LIVE_VERSION
        record, version = found
        updated = self._catalog.record_malware_scan(
            record.tenant_id, version.version_id, verdict, storage_version_id=version_id
        )
        if updated is None:
            return Verdict.NOT_A_LIVE_VERSION
        return self._act_on(record, updated, verdict, storage_key, version_id)

    def _act_on(
        self,
        record: FileRecord,
        version: FileVersionRecord,
        verdict: MalwareScan,
        storage_key: str,
        object_version_id: str | None,
    ) -> Verdict:
        if version.state is VersionState.REJECTED:
            # Nobody may read or process what the scanner refused: the object goes now, not at the next sweep.
            if object_version_id:
                self._content.withdraw([(storage_key, object_version_id)])
            return Verdict.REJECTED
        if verdict is MalwareScan.NO_THREATS_FOUND and version.state is VersionState.STORED:
            self.request_processing(record.tenant_id, record.file_id, version)
            return Verdict.PROCESSING
        # Still pending (the Object Created event will find the verdict), or a verdict repeated for bytes
        # whose processing had begun.
        return Verdict.RECORDED

    def request_processing(self, tenant_id: str, file_id: object, version: FileVersionRecord) -> str:
        """Ask the workflow to process a stored version; returns what happened, in words for the report.

        The database decides who may start it (one new attempt at a time), so duplicate events and
        sweeps never start it twice; a version silent past the stuck threshold gets a new attempt.
        Failing to ask never fails the upload: the bytes and the row are durable, and the sweep asks again.
        With a malware scanner on, nothing is processed before its verdict says the bytes are clean: this is
        the one gate every path to processing passes (the upload, the verdict, the sweeps).
        """
        if self._scanning.gates_processing and not self._found_clean(tenant_id, version):
            return AWAITING_MALWARE_SCAN
        attempt = self._attempts.queue_processing(
            tenant_id, version.version_id, stale_before=datetime.now(UTC) - self._stale_after
        )
        if attempt is None:
            return StartOutcome.ALREADY_STARTED.value
        request = ProcessVersion(
            tenant_id=tenant_id, file_id=str(file_id), version_id=str(version.version_id), attempt=attempt
        )
        try:
            return self._workflow.start(request).value
        except Exception as error:
            logger.warning("could not start processing; the sweep will ask again", extra={"error": str(error)})
            self._attempts.release_processing(tenant_id, version.version_id, attempt=attempt)
            return "unavailable"

    def _found_clean(self, tenant_id: str, version: FileVersionRecord) -> bool:
        # Read again: the verdict may have been recorded after the caller read this version.
        found = self._catalog.find_version(tenant_id, version.version_id)
        return found is not None and found[1].found_clean


def _mismatch(answer: bytes) -> object:
    """The child's verdict: None (the content is what it claims), a sentence saying why not, or anything else
    (not a verdict, refused by the caller)."""
    return json.loads(answer)["mismatch"]
