"""Artifacts as callers see them: create, read, history, new versions, restore.

Every entry point takes one authorization decision (read or write) on the artifact's collection through
the policy, before anything is revealed; an unentitled caller gets NotFound, exactly as for an id that
does not exist. Content is written before the row that refers to it, so no row ever points at missing
content (a crash between the two leaves only an unreferenced object).
"""

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from shared.domain.artifacts import (
    ArtifactCitation,
    ArtifactContent,
    ArtifactLimits,
    ArtifactRecord,
    ArtifactVersionRecord,
    NewArtifactVersion,
    Provenance,
    SourceRef,
    artifact_content_key,
    build_content,
    check_name,
    content_hash,
    merged_sources,
    parse_artifact_content_key,
)
from shared.domain.auth import Principal
from shared.domain.document import (
    MAX_DOCUMENT_BYTES,
    Block,
    ExtractedDocument,
    ExtractionLimits,
)
from shared.domain.errors import InvalidRequest, NotFound, PayloadTooLarge
from shared.domain.files import VersionState
from shared.domain.proposals import AppliedProposal
from shared.domain.search import Citation, excerpt_of
from shared.ports import (
    ArtifactStore,
    AuthorizationPolicy,
    DocumentParser,
    FileCatalog,
    FileContentStore,
    KnowledgeStore,
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

MAX_HISTORY_PAGE = 100


class SourceInput(BaseModel):
    """A file version the caller says the content came from; the current version when none is named."""

    model_config = ConfigDict(frozen=True)

    file_id: UUID
    version_id: UUID | None = None


class ContentInput(BaseModel):
    """Content as a caller gives it: Markdown or blocks (exactly one), and the chunks its `[n]` cite."""

    model_config = ConfigDict(frozen=True)

    markdown: str | None = None
    blocks: tuple[Block, ...] | None = None
    citations: tuple[str, ...] = ()  # chunk ids; citation n is the n-th
    sources: tuple[SourceInput, ...] = ()


@dataclass(frozen=True)
class ArtifactView:
    artifact: ArtifactRecord
    version: ArtifactVersionRecord
    content: ArtifactContent


class ArtifactService:
    def __init__(
        self,
        store: ArtifactStore,
        content: FileContentStore,
        policy: AuthorizationPolicy,
        files: FileCatalog,
        *,
        evidence: KnowledgeStore,
        markdown: DocumentParser,
        limits: ArtifactLimits | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        new_id: Callable[[], UUID] = uuid4,
    ) -> None:
        self._store = store
        self._content = content
        self._policy = policy
        self._files = files
        self._evidence = evidence
        self._markdown = markdown
        self._limits = limits or ArtifactLimits()
        self._clock = clock
        self._new_id = new_id

    @property
    def limits(self) -> ArtifactLimits:
        return self._limits

    # --- entry points -------------------------------------------------------------------------------------

    def create(
        self, principal: Principal, *, collection_id: str, name: str, body: ContentInput, producer: str
    ) -> ArtifactView:
        self._policy.ensure_can_write(principal, collection_id)
        clean_name = check_name(name)
        content, provenance = self._content_and_provenance(
            principal, collection_id, body, producer, {"name": clean_name}
        )
        artifact_id = self._new_id()
        new = self._write_content(principal, artifact_id, content, provenance)
        now = self._clock()
        artifact = ArtifactRecord(
            tenant_id=principal.tenant_id,
            artifact_id=artifact_id,
            collection_id=collection_id,
            name=clean_name,
            latest_version=1,
            created_by=principal.subject,
            created_at=now,
            updated_at=now,
        )
        version = self._store.create(artifact, new)
        return ArtifactView(artifact=self._readable(principal, artifact_id), version=version, content=content)

    def get(self, principal: Principal, artifact_id: UUID, *, version: int | None = None) -> ArtifactView:
        artifact = self._readable(principal, artifact_id)
        return self._view(artifact, version or artifact.latest_version)

    def history(
        self, principal: Principal, artifact_id: UUID, *, after: int | None = None, limit: int = MAX_HISTORY_PAGE
    ) -> tuple[ArtifactRecord, list[ArtifactVersionRecord]]:
        if not 1 <= limit <= MAX_HISTORY_PAGE:
            raise InvalidRequest(f"limit must be between 1 and {MAX_HISTORY_PAGE}")
        artifact = self._readable(principal, artifact_id)
        return artifact, self._store.versions(principal.tenant_id, artifact_id, after=after, limit=limit)

    def list_artifacts(
        self, principal: Principal, *, collection_id: str | None, limit: int, after: UUID | None
    ) -> tuple[list[ArtifactRecord], bool]:
        if not 1 <= limit <= MAX_HISTORY_PAGE:
            raise InvalidRequest(f"limit must be between 1 and {MAX_HISTORY_PAGE}")
        readable = self._policy.readable_collections(principal)
        return self._store.list(principal.tenant_id, readable, collection_id=collection_id, limit=limit, after=after)

    def add_version(
        self, principal: Principal, artifact_id: UUID, *, expected_latest: int, body: ContentInput, producer: str
    ) -> ArtifactView:
        artifact = self._writable(principal, artifact_id)
        content, provenance = self._content_and_provenance(
            principal, artifact.collection_id, body, producer, {"expectedLatestVersion": expected_latest}
        )
        return self.write_version(principal, artifact, expected_latest, content, provenance)

    def restore(
        self, principal: Principal, artifact_id: UUID, *, version: int, expected_latest: int, producer: str
    ) -> ArtifactView:
        """A new version with the restored version's content reference (never a pointer moved back: the
        history keeps saying what happened)."""
        artifact = self._writable(principal, artifact_id)
        restored = self._store.version(principal.tenant_id, artifact_id, version)
        if restored is None:
            raise InvalidRequest(f"the artifact has no version {version} (its latest is {artifact.latest_version})")
        provenance = Provenance(
            producer=producer,
            inputs={"version": version, "expectedLatestVersion": expected_latest},
            sources=restored.provenance.sources,
            restored_from=version,
        )
        new = NewArtifactVersion(
            content_key=restored.content_key,
            content_hash=restored.content_hash,
            content_bytes=restored.content_bytes,
            block_count=restored.block_count,
            provenance=provenance,
            created_by=principal.subject,
        )
        added = self._store.add_version(principal.tenant_id, artifact_id, expected_latest=expected_latest, new=new)
        return ArtifactView(
            artifact=self._readable(principal, artifact_id), version=added, content=self.read_content(added)
        )

    # --- for the writers of this package (proposals, exports) ---------------------------------------------

    def writable(self, principal: Principal, artifact_id: UUID) -> ArtifactRecord:
        return self._writable(principal, artifact_id)

    def readable(self, principal: Principal, artifact_id: UUID) -> ArtifactRecord:
        """The artifact's record, if the caller may read it (the not-found of a missing one otherwise)."""
        return self._readable(principal, artifact_id)

    def record_of(self, tenant_id: str, artifact_id: UUID) -> ArtifactRecord | None:
        """For the worker, which acts on a job already authorized when it was requested."""
        return self._store.get(tenant_id, artifact_id)

    def version_of(self, tenant_id: str, artifact_id: UUID, version: int) -> ArtifactVersionRecord | None:
        return self._store.version(tenant_id, artifact_id, version)

    def write_version(
        self,
        principal: Principal,
        artifact: ArtifactRecord,
        expected_latest: int,
        content: ArtifactContent,
        provenance: Provenance,
        *,
        proposal: AppliedProposal | None = None,
    ) -> ArtifactView:
        """Content (already checked to be the caller's to write) as version `expected_latest + 1`."""
        new = self._write_content(principal, artifact.artifact_id, content, provenance)
        added = self._store.add_version(
            principal.tenant_id, artifact.artifact_id, expected_latest=expected_latest, new=new, proposal=proposal
        )
        return ArtifactView(artifact=self._readable(principal, artifact.artifact_id), version=added, content=content)

    def accounts_for(self, key: str) -> bool | None:
        """Reconciliation: artifact content is accounted for while a version refers to it (content written by
        a request that crashed before its row is waste, and reported)."""
        claimed = parse_artifact_content_key(key)
        if claimed is None:
            return None
        tenant_id, artifact_id = claimed
        return self._store.refers_to(tenant_id, artifact_id, key)

    def read_content(self, version: ArtifactVersionRecord) -> ArtifactContent:
        raw = self._content.get(version.content_key, max_bytes=self._limits.max_content_bytes)
        if content_hash(raw) != version.content_hash:
            # Content is immutable and addressed by its hash: anything else is corruption, never served.
            raise RuntimeError(f"artifact content {version.content_key} does not match its hash")
        return ArtifactContent.model_validate_json(raw)

    # --- internals ----------------------------------------------------------------------------------------

    def _readable(self, principal: Principal, artifact_id: UUID) -> ArtifactRecord:
        artifact = self._store.get(principal.tenant_id, artifact_id)
        if artifact is None:
            raise NotFound("not found")
        self._policy.ensure_can_read(principal, artifact.collection_id)
        return artifact

    def _writable(self, principal: Principal, artifact_id: UUID) -> ArtifactRecord:
        artifact = self._store.get(principal.tenant_id, artifact_id)
        if artifact is None:
            raise NotFound("not found")
        self._policy.ensure_can_write(principal, artifact.collection_id)
        return artifact

    def _view(self, artifact: ArtifactRecord, number: int) -> ArtifactView:
        version = self._store.version(artifact.tenant_id, artifact.artifact_id, number)
        if version is None:
            raise InvalidRequest(f"the artifact has no version {number} (its latest is {artifact.latest_version})")
        return ArtifactView(artifact=artifact, version=version, content=self.read_content(version))

    def _write_content(
        self, principal: Principal, artifact_id: UUID, content: ArtifactContent, provenance: Provenance
    ) -> NewArtifactVersion:
        canonical = content.canonical_json()
        if len(canonical) > self._limits.max_content_bytes:
            raise PayloadTooLarge(
                f"the content is {len(canonical)} bytes stored; the limit is {self._limits.max_content_bytes}"
            )
        digest = content_hash(canonical)
        key = artifact_content_key(principal.tenant_id, artifact_id, digest)
        # Before the row: a crash after this leaves an unreferenced object, never a dangling row.
        self._content.put(key, canonical, content_type="application/json")
        return NewArtifactVersion(
            content_key=key,
            content_hash=digest,
            content_bytes=len(canonical),
            block_count=len(content.blocks),
            provenance=provenance,
            created_by=principal.subject,
        )

    def _content_and_provenance(
        self,
        principal: Principal,
        collection_id: str,
        body: ContentInput,
        producer: str,
        inputs: dict[str, JsonValue],
    ) -> tuple[ArtifactContent, Provenance]:
        blocks, input_format, input_digest = self._blocks_of(body)
        citations = self._citations(principal, collection_id, body.citations)
        content = build_content(blocks, citations, self._limits)
        sources = self._sources(principal, collection_id, body.sources)
        cited = [
            SourceRef(
                file_id=UUID(entry.citation.file_id),
                version_id=UUID(entry.citation.version_id),
                chunk_ids=(entry.chunk_id,),
                metadata=entry.citation.metadata,
                metadata_revision=entry.citation.metadata_revision,
            )
            for entry in citations
        ]
        provenance = Provenance(
            producer=producer,
            inputs={
                **inputs,
                "contentFormat": input_format,
                "inputHash": input_digest,
                "citations": list(body.citations),
                "sources": [{"fileId": str(s.file_id), "versionId": str(s.version_id)} for s in sources],
            },
            sources=merged_sources([*sources, *cited]),
        )
        return content, provenance

    def _blocks_of(self, body: ContentInput) -> tuple[Sequence[Block], str, str]:
        if (body.markdown is None) == (body.blocks is None):
            raise InvalidRequest("give the content as exactly one of markdown or blocks")
        if body.markdown is not None:
            raw = body.markdown.encode()
            if len(raw) > self._limits.max_markdown_bytes:
                raise PayloadTooLarge(
                    f"the Markdown is {len(raw)} bytes; the limit is {self._limits.max_markdown_bytes}"
                )
            return self.parse_markdown(body.markdown), "markdown", hashlib.sha256(raw).hexdigest()
        blocks = body.blocks or ()
        digest = hashlib.sha256(
            b"\n".join(block.model_dump_json(exclude_none=True).encode() for block in blocks)
        ).hexdigest()
        return blocks, "blocks", digest

    def parse_markdown(self, markdown: str) -> tuple[Block, ...]:
        """Markdown → blocks with the same parser that reads uploaded Markdown."""
        return self.parse_markdown_all([markdown])[0]

    def parse_markdown_all(self, texts: Sequence[str]) -> list[tuple[Block, ...]]:
        """Each text's blocks, read in one child process bounded in time and memory like every parse of a
        caller's bytes (a request must never pin the API's CPU): one deadline for the whole request."""
        total = sum(len(text.encode()) for text in texts)
        if total > self._limits.max_markdown_bytes:
            raise PayloadTooLarge(f"the Markdown is {total} bytes; the limit is {self._limits.max_markdown_bytes}")
        limits = ExtractionLimits(
            max_bytes=self._limits.max_markdown_bytes,
            max_text_bytes=self._limits.max_text_bytes,
            max_blocks=self._limits.max_blocks + 1,  # one past, so a document over the limit is refused, not cut
        )
        header = {"parser": dotted_name(type(self._markdown)), "limits": limits.model_dump(mode="json")}
        too_large = PayloadTooLarge("the Markdown is too large to read: send it in smaller parts, or as blocks")
        # Validated: never trust the shape of what a process that parsed a caller's bytes sends back.
        outcomes = sandboxed(
            isolated.parse_texts,
            pack(header, *(text.encode() for text in texts)),
            isolated.OUTCOMES.validate_json,
            timeout_seconds=self._limits.parse_timeout_seconds,
            memory_limit_bytes=self._limits.parse_memory_bytes,
            max_answer_bytes=MAX_DOCUMENT_BYTES,
            answer_too_large=b"",
        )
        match outcomes:
            case TimedOut(seconds=seconds):
                raise PayloadTooLarge(
                    f"the Markdown took longer than {seconds:g} seconds to read (the limit): send it in smaller"
                    " parts, or as blocks"
                )
            case Unreadable(error=error):
                raise too_large from error
            # Out of memory (its empty answer is Unreadable), a death, an answer past the limit: all too large.
            case AnswerTooLarge() | OutOfMemory() | KilledFromOutside() | Crashed():
                raise too_large
        parsed = []
        for outcome in outcomes:
            if not isinstance(outcome, ExtractedDocument):
                raise InvalidRequest(f"the Markdown could not be read: {outcome.detail}")
            if outcome.truncated:
                raise PayloadTooLarge(f"the Markdown is over a limit: {'; '.join(outcome.warnings)}")
            parsed.append(outcome.blocks)
        return parsed

    def _citations(self, principal: Principal, collection_id: str, chunk_ids: Sequence[str]) -> list[ArtifactCitation]:
        """Snapshots of the cited chunks. An artifact cites only its own collection: its readers are that
        collection's, and an excerpt from another collection would reach people who may not read it."""
        if len(chunk_ids) > self._limits.max_citations:
            raise PayloadTooLarge(f"{len(chunk_ids)} citations; the limit is {self._limits.max_citations}")
        if not chunk_ids:
            return []
        readable = self._policy.readable_collections(principal)
        snapshots = {s.chunk_id: s for s in self._evidence.snapshots(principal.tenant_id, readable, list(chunk_ids))}
        cited_at = self._clock()
        citations = []
        for number, chunk_id in enumerate(chunk_ids, start=1):
            snapshot = snapshots.get(chunk_id)
            if snapshot is None:
                # The same answer for a chunk that does not exist and one the caller may not read.
                raise NotFound("not found", field=f"citations[{number - 1}]")
            if snapshot.collection_id != collection_id:
                raise InvalidRequest(
                    _other_collection(f"citations[{number - 1}]", snapshot.collection_id, collection_id)
                )
            citation = Citation.of_snapshot(snapshot, excerpt=excerpt_of(snapshot.body), retrieved_at=cited_at)
            citations.append(ArtifactCitation(number=number, chunk_id=chunk_id, citation=citation))
        return citations

    def _sources(self, principal: Principal, collection_id: str, sources: Sequence[SourceInput]) -> list[SourceRef]:
        if len(sources) > self._limits.max_sources:
            raise PayloadTooLarge(f"{len(sources)} sources; the limit is {self._limits.max_sources}")
        found = []
        for position, source in enumerate(sources):
            record = self._files.get_file(principal.tenant_id, source.file_id)
            if record is None:
                raise NotFound("not found", field=f"sources[{position}]")
            try:
                self._policy.ensure_can_read(principal, record.collection_id)
            except NotFound:
                raise NotFound("not found", field=f"sources[{position}]") from None
            if record.collection_id != collection_id:
                raise InvalidRequest(_other_collection(f"sources[{position}]", record.collection_id, collection_id))
            version = (
                record.current
                if source.version_id is None
                else next((v for v in record.versions if v.version_id == source.version_id), None)
            )
            if version is None:
                raise NotFound("not found", field=f"sources[{position}].versionId")
            if version.state is not VersionState.STORED:
                raise InvalidRequest(f"sources[{position}]: that version is {version.state.value}, not stored")
            found.append(
                SourceRef(
                    file_id=source.file_id,
                    version_id=version.version_id,
                    metadata=record.metadata,
                    metadata_revision=record.metadata_revision,
                )
            )
        return found


def _other_collection(where: str, theirs: str, ours: str) -> str:
    return (
        f"{where} is in collection {theirs!r}, not the artifact's {ours!r}: an artifact cites and derives from its"
        " own collection only (its readers may not read another)"
    )


def parse_blocks(raw: Sequence[dict[str, object]]) -> tuple[Block, ...]:
    """A caller's blocks, each refused with its position when it is not one."""
    blocks = []
    for position, item in enumerate(raw):
        try:
            blocks.append(Block.model_validate(item))
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(part) for part in problem["loc"])
            raise InvalidRequest(f"blocks[{position}]{'.' + where if where else ''}: {problem['msg']}") from error
    return tuple(blocks)
