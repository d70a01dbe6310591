"""PDF tools: create (a cited report), merge, split, watermark and compose. Results are new files; inputs never
change. Each result is an export record (kind `pdf`) named by the hash of its normalised operation, so the same
operation on the same exact file versions is one result, rendered once, by the same worker and file ports as
every export. The inputs are read and rewritten in a bounded child process: an encrypted or malformed input
ends the result as `failed`, with a sentence naming it."""

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from shared.domain.auth import Principal
from shared.domain.errors import InvalidRequest, NotFound, PayloadTooLarge
from shared.domain.exports import ExportFormat, ExportKind, ExportRecord, NewExport, RenderedFile, RenderFailed
from shared.domain.files import FileVersionRecord, VersionState
from shared.domain.pdf_tools import (
    MAX_PDF_INPUTS,
    MAX_SPLIT_PARTS,
    MAX_WATERMARK_CHARS,
    PagePick,
    PdfInput,
    Segments,
    format_pages,
    parse_pages,
)
from shared.ports import AuthorizationPolicy, FileCatalog, FileContentStore, PdfOperations
from shared.sandbox import dotted_name, pack
from shared.services import isolated
from shared.services.artifacts import ArtifactService, ArtifactView, ContentInput
from shared.services.exports import ExportService

PDF = "application/pdf"


@dataclass(frozen=True)
class PdfSource:
    """A stored PDF a caller names: a file, optionally an exact version, optionally some of its pages."""

    file_id: UUID
    version_id: UUID | None = None
    pages: str | None = None  # "1-3,5,8-"


@dataclass(frozen=True)
class _Resolved:
    file_id: UUID
    version: FileVersionRecord
    collection_id: str
    pages: Segments | None


class PdfTools:
    def __init__(
        self,
        exports: ExportService,
        artifacts: ArtifactService,
        files: FileCatalog,
        content: FileContentStore,
        policy: AuthorizationPolicy,
        *,
        operations: PdfOperations,
    ) -> None:
        self._exports = exports
        self._artifacts = artifacts
        self._files = files
        self._content = content
        self._policy = policy
        self._operations = operations
        exports.add_producer(ExportKind.PDF, self._produce)

    # --- requests -----------------------------------------------------------------------------------------

    def create(
        self, principal: Principal, *, collection_id: str, name: str, body: ContentInput
    ) -> tuple[ArtifactView, ExportRecord]:
        """A report from structured content with citations: an artifact (so it has history and provenance)
        and its PDF export."""
        view = self._artifacts.create(
            principal, collection_id=collection_id, name=name, body=body, producer="create_pdf"
        )
        record, _ = self._exports.export_artifact(
            principal, view.artifact.artifact_id, version=view.version.version, export_format=ExportFormat.PDF
        )
        return view, record

    def merge(
        self, principal: Principal, sources: Sequence[PdfSource], *, name: str | None, collection_id: str | None
    ) -> list[ExportRecord]:
        """Several PDFs (or some of their pages) as one, with an outline entry per source."""
        resolved = self._resolve(principal, sources, at_least=2)
        output = self._output_collection(principal, resolved, collection_id)
        operation = {"op": "merge", "inputs": self._inputs(resolved), "name": name or "merged"}
        return [self._claim(principal, output, operation)]

    def compose(
        self, principal: Principal, pages: Sequence[PdfSource], *, name: str | None, collection_id: str | None
    ) -> list[ExportRecord]:
        """Pages of several sources in the given order, as one PDF."""
        resolved = self._resolve(principal, pages, at_least=1)
        if any(entry.pages is None for entry in resolved):
            raise InvalidRequest('compose names the pages it takes from each source (pages: "1-3,5")')
        output = self._output_collection(principal, resolved, collection_id)
        operation = {"op": "compose", "inputs": self._inputs(resolved), "name": name or "composed"}
        return [self._claim(principal, output, operation)]

    def split(self, principal: Principal, source: PdfSource, ranges: Sequence[str]) -> list[ExportRecord]:
        """Page ranges of one PDF, each as a new file."""
        if not 1 <= len(ranges) <= MAX_SPLIT_PARTS:
            raise InvalidRequest(f"give between 1 and {MAX_SPLIT_PARTS} ranges")
        (resolved,) = self._resolve(principal, [source], at_least=1)
        self._policy.ensure_can_write(principal, resolved.collection_id)
        stem = resolved.version.filename.rsplit(".", 1)[0]
        records = []
        for part, spec in enumerate(ranges, start=1):
            segments = _pages_of(spec, f"ranges[{part - 1}]")
            inputs = [{**self._inputs([resolved])[0], "pages": format_pages(segments)}]
            operation = {
                "op": "split",
                "inputs": inputs,
                "part": part,
                "name": f"{stem} pages {format_pages(segments)}",
            }
            records.append(self._claim(principal, resolved.collection_id, operation))
        return records

    def watermark(self, principal: Principal, source: PdfSource, *, text: str, opacity: float) -> list[ExportRecord]:
        """`text` across every page (upright on rotated pages too), as a new file."""
        clean = " ".join(text.split())
        if not clean or len(clean) > MAX_WATERMARK_CHARS:
            raise InvalidRequest(f"the watermark text must be 1 to {MAX_WATERMARK_CHARS} characters")
        if not 0.05 <= opacity <= 1:
            raise InvalidRequest("opacity must be between 0.05 and 1")
        (resolved,) = self._resolve(principal, [source], at_least=1)
        if resolved.pages is not None:
            raise InvalidRequest("a watermark goes on every page: name no pages")
        self._policy.ensure_can_write(principal, resolved.collection_id)
        stem = resolved.version.filename.rsplit(".", 1)[0]
        operation = {
            "op": "watermark",
            "inputs": self._inputs([resolved]),
            "text": clean,
            "opacity": round(opacity, 3),
            "name": f"{stem} (watermarked)",
        }
        return [self._claim(principal, resolved.collection_id, operation)]

    # --- the worker ---------------------------------------------------------------------------------------

    def _produce(self, record: ExportRecord) -> RenderedFile:
        operation = record.operation or {}
        inputs, picks = self._load(record.tenant_id, operation)
        header = {
            "operations": dotted_name(type(self._operations)),
            "op": operation.get("op"),
            "text": str(operation.get("text", "")),
            "opacity": float(operation.get("opacity", 0.25)),  # type: ignore[arg-type]
            "names": [source.name for source in inputs],
            "picks": [{"source": pick.source, "pages": pick.pages} for pick in picks],
            "limits": self._exports.limits.model_dump(mode="json"),
        }
        payload = pack(header, *(source.content for source in inputs))
        return self._exports.isolated(isolated.pdf_operation, payload, ExportFormat.PDF)

    def _load(self, tenant_id: str, operation: dict[str, Any]) -> tuple[list[PdfInput], list[PagePick]]:
        inputs: list[PdfInput] = []
        picks: list[PagePick] = []
        limit = self._exports.limits.max_bytes
        held = 0
        for position, entry in enumerate(operation.get("inputs", [])):
            found = self._files.find_version(tenant_id, UUID(entry["versionId"]))
            if found is None or found[1].state is not VersionState.STORED:
                raise RenderFailed(f"input {position + 1} was deleted before the PDF could be made")
            version = found[1]
            try:
                content = self._content.get(version.storage_key, version_id=version.storage_version_id, max_bytes=limit)
            except ValueError as error:
                raise RenderFailed(f"{version.filename} is larger than {limit} bytes (the limit)") from error
            held += len(content)
            if held > limit:
                raise RenderFailed(f"the inputs pass {limit} bytes together (the limit)")
            inputs.append(PdfInput(name=version.filename, content=content))
            pages = entry.get("pages")
            picks.append(PagePick(source=position, pages=parse_pages(pages) if pages else None))
        return inputs, picks

    # --- internals ----------------------------------------------------------------------------------------

    def _resolve(self, principal: Principal, sources: Sequence[PdfSource], *, at_least: int) -> list[_Resolved]:
        if not at_least <= len(sources) <= MAX_PDF_INPUTS:
            raise InvalidRequest(f"give between {at_least} and {MAX_PDF_INPUTS} PDFs")
        resolved = []
        for position, source in enumerate(sources):
            where = f"sources[{position}]"
            record = self._files.get_file(principal.tenant_id, source.file_id)
            if record is None:
                raise NotFound("not found", field=where)
            try:
                self._policy.ensure_can_read(principal, record.collection_id)
            except NotFound:
                raise NotFound("not found", field=where) from None
            version = (
                record.current
                if source.version_id is None
                else next((v for v in record.versions if v.version_id == source.version_id), None)
            )
            if version is None or version.state is not VersionState.STORED:
                raise NotFound("not found", field=f"{where}.versionId")
            if version.media_type != PDF:
                raise InvalidRequest(f"{where} ({version.filename}) is not a PDF")
            pages = _pages_of(source.pages, f"{where}.pages") if source.pages else None
            resolved.append(_Resolved(source.file_id, version, record.collection_id, pages))
        # The worker holds every input at once: their bytes together are bounded, repeats counted each time.
        total = sum(entry.version.byte_size or entry.version.declared_byte_size for entry in resolved)
        limit = self._exports.limits.max_bytes
        if total > limit:
            raise PayloadTooLarge(f"the inputs are {total} bytes together; the limit is {limit}")
        return resolved

    def _output_collection(self, principal: Principal, resolved: Sequence[_Resolved], named: str | None) -> str:
        """The inputs' collection: a result lives where its inputs do (its readers could not read them
        otherwise). Inputs from several collections, or a different output collection, are refused."""
        collection = resolved[0].collection_id
        others = sorted({entry.collection_id for entry in resolved} - {collection})
        if others or (named is not None and named != collection):
            raise InvalidRequest(
                f"every input and the result must be in one collection (the inputs are in {collection!r}"
                f"{''.join(f', {other!r}' for other in others)}): a result's readers must be able to read its inputs"
            )
        self._policy.ensure_can_write(principal, collection)
        return collection

    @staticmethod
    def _inputs(resolved: Sequence[_Resolved]) -> list[dict[str, Any]]:
        return [
            {
                "fileId": str(entry.file_id),
                "versionId": str(entry.version.version_id),
                "pages": format_pages(entry.pages) if entry.pages else None,
            }
            for entry in resolved
        ]

    def _claim(self, principal: Principal, collection_id: str, operation: dict[str, Any]) -> ExportRecord:
        normalised = {**operation, "collectionId": collection_id}
        digest = hashlib.sha256(json.dumps(normalised, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        record, _ = self._exports.claim(
            NewExport(
                tenant_id=principal.tenant_id,
                export_id=uuid4(),
                collection_id=collection_id,
                kind=ExportKind.PDF,
                format=ExportFormat.PDF,
                operation=normalised,
                operation_hash=digest,
                created_by=principal.subject,
            )
        )
        return record


def _pages_of(spec: str, where: str) -> Segments:
    try:
        return parse_pages(spec)
    except ValueError as error:
        raise InvalidRequest(f"{where}: {error}") from error
