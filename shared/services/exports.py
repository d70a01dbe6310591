"""Exports as callers see them, and the render worker that makes them.

A request claims the export record (one per source and format: a second request, also one made at the same
moment, gets the existing record) and hands the render to the worker tier; it never renders on the request
path. The worker renders in a child process bounded in time and memory, then writes the bytes as a file
through the file ports (a row, the bytes, the row marked stored) and only then marks the export rendered:
a crash leaves a pending export and a pending file row the next attempt completes, never a rendered export
without its bytes. A render that cannot succeed fails with a sentence and is not retried; only the
infrastructure failing raises, and only that is retried.
"""

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import assert_never
from uuid import UUID, uuid4

from shared.domain.artifacts import SourceRef, merged_sources
from shared.domain.auth import Principal
from shared.domain.document import ExtractedDocument
from shared.domain.errors import InvalidRequest, NotFound
from shared.domain.exports import (
    ExportFormat,
    ExportKind,
    ExportRecord,
    ExportState,
    NewExport,
    RenderedFile,
    RenderFailed,
    RenderJob,
    RenderLimits,
    RenderRequest,
    content_id,
)
from shared.domain.files import (
    FileRecord,
    FileVersionRecord,
    NewVersion,
    SignedRead,
    VersionState,
    ensure_readable,
)
from shared.domain.transcription import with_moments
from shared.domain.uploads import clean_filename, storage_key
from shared.observability import logger
from shared.ports import (
    MAX_SIGNED_READ_LIFETIME,
    ArtifactRenderer,
    AuthorizationPolicy,
    ExportStore,
    FileCatalog,
    FileContentStore,
    RenderQueue,
)
from shared.sandbox import (
    AnswerTooLarge,
    Crashed,
    KilledFromOutside,
    OutOfMemory,
    TimedOut,
    Unreadable,
    dotted_name,
    pack,
    sandboxed,
)
from shared.services import isolated
from shared.services.artifacts import ArtifactService

# A render left pending this long without a touch is handed to the worker again by the sweep.
STALLED_AFTER = timedelta(minutes=10)
MAX_RENDER_ATTEMPTS = 5

_OUT_OF_MEMORY = "rendering ran out of memory: export a shorter version"


@dataclass(frozen=True)
class ExportView:
    record: ExportRecord
    download: SignedRead | None = None
    # Why there is no download for a rendered export (its file was deleted since), in a sentence.
    gone: str | None = None


class ExportService:
    def __init__(
        self,
        store: ExportStore,
        artifacts: ArtifactService,
        files: FileCatalog,
        content: FileContentStore,
        policy: AuthorizationPolicy,
        *,
        queue: RenderQueue,
        renderers: Mapping[ExportFormat, ArtifactRenderer],
        read_document: Callable[[FileVersionRecord], ExtractedDocument],
        limits: RenderLimits | None = None,
        new_id: Callable[[], UUID] = uuid4,
    ) -> None:
        self._store = store
        self._artifacts = artifacts
        self._files = files
        self._content = content
        self._policy = policy
        self._queue = queue
        self._renderers = dict(renderers)
        self._read_document = read_document
        self._limits = limits or RenderLimits()
        self._new_id = new_id
        self._producers: dict[ExportKind, Callable[[ExportRecord], RenderedFile]] = {
            ExportKind.ARTIFACT: self._render_artifact,
            ExportKind.CONVERSION: self._render_conversion,
        }

    @property
    def limits(self) -> RenderLimits:
        return self._limits

    def add_producer(self, kind: ExportKind, produce: Callable[[ExportRecord], RenderedFile]) -> None:
        """Another kind of rendering (the PDF tools) through the same records, worker and file ports."""
        self._producers[kind] = produce

    # --- requests -----------------------------------------------------------------------------------------

    def export_artifact(
        self, principal: Principal, artifact_id: UUID, *, version: int, export_format: ExportFormat
    ) -> tuple[ExportRecord, bool]:
        """An exact version, never "the artifact": sharing one export across versions would hand someone
        last week's document."""
        artifact = self._artifacts.writable(principal, artifact_id)
        exported = self._artifacts.version_of(principal.tenant_id, artifact_id, version)
        if exported is None:
            raise InvalidRequest(f"the artifact has no version {version} (its latest is {artifact.latest_version})")
        return self.claim(
            NewExport(
                tenant_id=principal.tenant_id,
                export_id=self._new_id(),
                collection_id=artifact.collection_id,
                kind=ExportKind.ARTIFACT,
                format=export_format,
                artifact_id=artifact_id,
                version=version,
                created_by=principal.subject,
                # The version's sources as it recorded them: every format of one version names the same metadata.
                sources=exported.provenance.sources,
            )
        )

    def convert_file(
        self, principal: Principal, file_id: UUID, *, version_id: UUID | None, export_format: ExportFormat
    ) -> tuple[ExportRecord, bool]:
        """Any extractable uploaded file version, through its block list."""
        record = self._files.get_file(principal.tenant_id, file_id)
        if record is None:
            raise NotFound("not found")
        self._policy.ensure_can_write(principal, record.collection_id)
        version = record.version(version_id)
        if version.export_id is not None:
            raise InvalidRequest(
                "this file is itself an export: convert its source (the artifact or the uploaded file) instead"
            )
        ensure_readable(version)
        return self.claim(
            NewExport(
                tenant_id=principal.tenant_id,
                export_id=self._new_id(),
                collection_id=record.collection_id,
                kind=ExportKind.CONVERSION,
                format=export_format,
                source_file_id=file_id,
                source_version_id=version.version_id,
                created_by=principal.subject,
                sources=(
                    SourceRef(
                        file_id=file_id,
                        version_id=version.version_id,
                        metadata=record.metadata,
                        metadata_revision=record.metadata_revision,
                    ),
                ),
            )
        )

    def claim(self, new: NewExport) -> tuple[ExportRecord, bool]:
        """The record for `new`'s source (made now, or the existing one), with its render requested when it
        is new; True when this call made it. An existing export whose file was deleted, or whose render failed
        for a passing reason, is rendered again (its next generation), keeping the sources its claim recorded."""
        if new.kind is ExportKind.PDF and not new.sources:
            new = new.model_copy(update={"sources": self._operation_sources(new)})
        record, made = self._store.claim(new)
        if not made and (record.failure_retryable or self._output_gone(record)):
            reopened = self._store.reopen(record.tenant_id, record.export_id, generation=record.generation)
            if reopened is not None:
                record, made = reopened, True
            else:  # another request reopened it first (or it was rendered again too often): as it is now
                record = self._store.get(record.tenant_id, record.export_id) or record
        if made:
            self._submit(record)
        return record, made

    def _operation_sources(self, new: NewExport) -> tuple[SourceRef, ...]:
        """A PDF operation's inputs (already resolved and authorized by its caller), each with its file's metadata
        now; an input deleted in between is named without it."""
        files: dict[UUID, FileRecord | None] = {}
        found = []
        inputs = (new.operation or {}).get("inputs")
        for entry in inputs if isinstance(inputs, list) else []:
            if not isinstance(entry, dict):
                continue
            file_id, version_id = UUID(str(entry["fileId"])), UUID(str(entry["versionId"]))
            if file_id not in files:
                files[file_id] = self._files.get_file(new.tenant_id, file_id)
            record = files[file_id]
            found.append(
                SourceRef(file_id=file_id, version_id=version_id)
                if record is None
                else SourceRef(
                    file_id=file_id,
                    version_id=version_id,
                    metadata=record.metadata,
                    metadata_revision=record.metadata_revision,
                )
            )
        return merged_sources(found)

    def _output(self, record: ExportRecord) -> FileVersionRecord | None:
        """Exactly the version this export rendered, while it is stored (never whatever the file holds now)."""
        found = self._files.find_version(record.tenant_id, record.output_version_id)
        if found is None or found[0].file_id != record.file_id:
            return None
        version = found[1]
        if version.export_id != record.export_id or version.state is not VersionState.STORED:
            return None
        return version

    def _output_gone(self, record: ExportRecord) -> bool:
        return record.state is ExportState.RENDERED and self._output(record) is None

    def get(self, principal: Principal, export_id: UUID) -> ExportView:
        """The export and, once rendered, a signed download (at most 15 minutes): entitlement is checked on
        every call, so someone removed from the collection stops being able to download what they exported."""
        record = self._store.get(principal.tenant_id, export_id)
        if record is None:
            raise NotFound("not found")
        self._policy.ensure_can_read(principal, record.collection_id)
        if record.state is not ExportState.RENDERED or record.file_id is None:
            return ExportView(record=record)
        version = self._output(record)
        if version is None:
            return ExportView(record=record, gone="the exported file was deleted: ask for the export again")
        signed = self._content.signed_read(
            version.storage_key,
            version_id=version.storage_version_id,
            filename=version.filename,
            lifetime=MAX_SIGNED_READ_LIFETIME,
        )
        return ExportView(record=record, download=signed)

    # --- the worker ---------------------------------------------------------------------------------------

    def render(self, job: RenderJob) -> ExportState | None:
        """Render one export (the worker's entry point). Idempotent: an export no longer pending is done."""
        record = self._store.begin_attempt(job.tenant_id, job.export_id)
        if record is None:
            return None
        if record.render_attempts > MAX_RENDER_ATTEMPTS:
            return self._fail(
                record,
                RenderFailed(
                    f"the render was interrupted {MAX_RENDER_ATTEMPTS} times; ask for the export again later",
                    retryable=True,
                ),
            )
        produce = self._producers[record.kind]
        try:
            rendered = produce(record)
        except RenderFailed as failure:
            return self._fail(record, failure)
        file_id = self._write_output(record, rendered)
        if not self._store.mark_rendered(
            record.tenant_id, record.export_id, generation=record.generation, file_id=file_id, rendered=rendered
        ):
            # Another worker decided this generation first (a duplicate delivery): its file is the export's.
            return None
        return ExportState.RENDERED

    def _fail(self, record: ExportRecord, failure: RenderFailed) -> ExportState | None:
        """Failed with a sentence; the file an earlier attempt of this generation made (pending, or stored by an
        attempt that crashed before its mark) leaves with it: nothing partial stays visible."""
        if not self._store.mark_failed(
            record.tenant_id,
            record.export_id,
            generation=record.generation,
            reason=failure.sentence,
            retryable=failure.retryable,
        ):
            return None  # another worker decided this generation first
        found = self._files.find_version(record.tenant_id, record.output_version_id)
        if found is not None and found[1].state in (VersionState.PENDING, VersionState.STORED):
            self._files.begin_delete_file(record.tenant_id, record.output_file_id)
        return ExportState.FAILED

    def resubmit_stalled(
        self, tenant_id: str, now: datetime | None = None, *, untouched_since: datetime | None = None
    ) -> int:
        """Hand pending exports nobody has touched for a while to the worker again (a lost job, a crash); those
        untouched since `untouched_since` when given (a restart: whatever was rendering then is not any more)."""
        cutoff = untouched_since or (now or datetime.now(UTC)) - STALLED_AFTER
        stalled = self._store.stalled(tenant_id, updated_before=cutoff)
        for record in stalled:
            self._submit(record)
        return len(stalled)

    def _submit(self, record: ExportRecord) -> None:
        try:
            self._queue.submit(RenderJob(tenant_id=record.tenant_id, export_id=record.export_id))
        except Exception as error:  # the record is durable: the sweep submits it again
            logger.warning("could not hand a render to the worker; the sweep will", extra={"error": str(error)})

    def _render_artifact(self, record: ExportRecord) -> RenderedFile:
        assert record.artifact_id is not None
        assert record.version is not None
        artifact = self._artifacts.record_of(record.tenant_id, record.artifact_id)
        version = self._artifacts.version_of(record.tenant_id, record.artifact_id, record.version)
        if artifact is None or version is None:
            raise RenderFailed("the artifact version was deleted before it could be rendered")
        content = self._artifacts.read_content(version)
        request = RenderRequest(
            title=f"{artifact.name} (version {version.version})",
            blocks=content.blocks,
            citations=content.citations,
            content_id=content_id(version.content_hash, record.format.value),
        )
        return self.render_isolated(record.format, request)

    def _render_conversion(self, record: ExportRecord) -> RenderedFile:
        assert record.source_version_id is not None
        found = self._files.find_version(record.tenant_id, record.source_version_id)
        if found is None or found[1].state is not VersionState.STORED:
            raise RenderFailed("the file version was deleted before it could be converted")
        version = found[1]
        document = self._read_document(version)
        request = RenderRequest(
            title=version.filename,
            # A recording's transcript keeps each segment's moment in whatever format it is rendered to.
            blocks=with_moments(document.blocks),
            content_id=content_id(str(version.version_id), version.document_key or "", record.format.value),
        )
        return self.render_isolated(record.format, request)

    def render_isolated(
        self,
        export_format: ExportFormat,
        request: RenderRequest,
        *,
        timeout_seconds: float | None = None,
        memory_limit_bytes: int | None = None,
    ) -> RenderedFile:
        """The renderer in a child process: a render that loops or runs out of memory ends as a sentence.
        A render on the request path passes tighter bounds than the worker's."""
        header = {
            "renderer": dotted_name(type(self._renderers[export_format])),
            "request": request.model_dump_json(),
            "limits": self._limits.model_dump(mode="json"),
        }
        return self.isolated(
            isolated.render_document,
            pack(header),
            export_format,
            timeout_seconds=timeout_seconds,
            memory_limit_bytes=memory_limit_bytes,
        )

    def isolated(
        self,
        work: Callable[[bytes], bytes],
        payload: bytes,
        export_format: ExportFormat,
        *,
        timeout_seconds: float | None = None,
        memory_limit_bytes: int | None = None,
    ) -> RenderedFile:
        """`work(payload)` (a module-level function of shared/services/isolated.py answering as a rendering) in
        a child process bounded in time and memory; RenderFailed (raised there or for how it ended) comes back
        as a sentence."""
        limits = self._limits
        answer = sandboxed(
            work,
            payload,
            _rendered,
            timeout_seconds=timeout_seconds or limits.timeout_seconds,
            memory_limit_bytes=memory_limit_bytes or limits.memory_limit_bytes,
            max_answer_bytes=limits.max_bytes + 1024 * 1024,
            answer_too_large=isolated.failure_answer(_OUT_OF_MEMORY),
        )
        match answer:
            case TimedOut(seconds=seconds):
                raise RenderFailed(f"rendering took longer than {seconds:g} seconds (the export limit)", retryable=True)
            case AnswerTooLarge():
                raise RenderFailed(f"the rendered file would pass {limits.max_bytes} bytes (the export limit)")
            case OutOfMemory():
                # A native allocation that failed under the limit is the MemoryError the child would report.
                raise RenderFailed(_OUT_OF_MEMORY)
            case KilledFromOutside(exitcode=exitcode) | Crashed(exitcode=exitcode):
                logger.error("a renderer died", extra={"exitcode": exitcode, "format": export_format.value})
                raise RenderFailed("rendering failed inside the renderer (recorded for the operators)", retryable=True)
            case Unreadable(error=error):
                raise RenderFailed("rendering failed inside the renderer (recorded for the operators)") from error
            case RenderedFile() if answer.format is not export_format:
                raise RenderFailed("rendering failed inside the renderer (recorded for the operators)")
            case RenderedFile():
                return answer
            case _:
                assert_never(answer)

    def _write_output(self, record: ExportRecord, rendered: RenderedFile) -> UUID:
        """The rendering as a file, through the file ports: row (pending, never extracted), bytes, stored."""
        file_id, version_id = record.output_file_id, record.output_version_id
        key = storage_key(record.tenant_id, file_id, version_id)
        found = self._files.find_version(record.tenant_id, version_id)
        if found is None:
            self._files.create_version(
                NewVersion(
                    tenant_id=record.tenant_id,
                    file_id=file_id,
                    version_id=version_id,
                    collection_id=record.collection_id,
                    filename=self._output_name(record),
                    media_type=rendered.format.media_type,
                    declared_byte_size=len(rendered.content),
                    storage_key=key,
                    created_by=record.created_by,
                    export_id=record.export_id,
                ),
                new_file=True,
            )
            state = VersionState.PENDING
        else:
            state = found[1].state
        if state is VersionState.PENDING:
            stored = self._content.put(key, rendered.content, content_type=rendered.format.media_type)
            self._files.mark_stored(
                record.tenant_id, version_id, byte_size=len(rendered.content), storage_version_id=stored.version_id
            )
        return file_id

    def _output_name(self, record: ExportRecord) -> str:
        extension = record.format.extension
        if record.kind is ExportKind.ARTIFACT and record.artifact_id is not None:
            artifact = self._artifacts.record_of(record.tenant_id, record.artifact_id)
            stem = f"{artifact.name if artifact else 'artifact'} v{record.version}"
        elif record.kind is ExportKind.CONVERSION and record.source_version_id is not None:
            found = self._files.find_version(record.tenant_id, record.source_version_id)
            stem = found[1].filename.rsplit(".", 1)[0] if found else "converted"
        else:
            stem = str((record.operation or {}).get("name") or "document")
        return clean_filename(stem[: 255 - len(extension)] + extension)


def _rendered(answer: bytes) -> RenderedFile:
    """The child's answer read (ValueError, KeyError, TypeError: unreadable); RenderFailed when it says it failed."""
    header, _, content = answer.partition(b"\n")
    parsed = json.loads(header)
    if "failed" in parsed:
        raise RenderFailed(str(parsed["failed"])[:2000])
    return RenderedFile.model_validate({**parsed["ok"], "content": content})
