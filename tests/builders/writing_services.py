"""The second wave's services (artifacts, exports, PDF tools, document writing, answers) wired over the in-memory
fakes as shared/bootstrap/container.py wires them over the real adapters: the one place unit tests build them by
hand. Renderers and parsers are the real ones, in their sandboxed child."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from uuid import UUID

from shared.adapters.parsers.markdown import MarkdownParser
from shared.adapters.pdf_operations import PypdfOperations
from shared.bootstrap import export_renderers
from shared.domain.answers import EvidenceBlock, GeneratedDraft
from shared.domain.artifacts import ArtifactLimits
from shared.domain.auth import Principal
from shared.domain.capabilities import CapabilityStatus
from shared.domain.document import BlockKind
from shared.domain.exports import RenderLimits
from shared.domain.files import FileVersionRecord
from shared.domain.knowledge import RankedChunk
from shared.domain.query_constraints import NO_CONSTRAINTS, QueryConstraints
from shared.domain.search import RetrievalTuning, SearchFilters, words_of
from shared.ports import AuthorizationPolicy, EmbeddingProvider, Generator
from shared.services.answers import AnswerService
from shared.services.artifacts import ArtifactService
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.document_writing import DocumentWriter
from shared.services.exports import ExportService
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.files import UploadTicket
from shared.services.metering import Metering
from shared.services.pdf_tools import PdfTools
from shared.services.retrieval import Retrieval
from tests.fakes import FakeKnowledgeStore, Fakes
from tests.fakes_writing import (
    FakeAnswerStore,
    FakeArtifactStore,
    FakeExportStore,
    FakeReplacementStore,
    RecordingRenderQueue,
    chunks_of,
)


class FakeKeywordLane:
    """The keyword lane over the fake knowledge store's chunks: a chunk scores the share of the query's words it
    holds (any word may match), only chunks of `collections` that hold the constraints' phrases as consecutive folded
    words and none of its exclusions (the adapter also stems); no vector lane runs beside it."""

    def __init__(self, knowledge: FakeKnowledgeStore) -> None:
        self._knowledge = knowledge

    def search(
        self,
        tenant_id: str,
        collections: frozenset[str],
        query: str,
        *,
        limit: int,
        filters: SearchFilters,
        k1: float,
        b: float,
        context_weight: float = 1.0,
        constraints: QueryConstraints = NO_CONSTRAINTS,
    ) -> list[RankedChunk]:
        terms = {word.strip(".,?!:;").lower() for word in query.split()} - {""}
        scored = []
        for (tenant, chunk_id), chunk in self._knowledge.chunks.items():
            if tenant != tenant_id or chunk.collection_id not in collections:
                continue
            if not _holds_constraints(words_of(chunk.draft.text), constraints):
                continue
            words = {word.strip(".,?!:;").lower() for word in chunk.draft.text.split()}
            if hits := len(terms & words):
                scored.append((hits / len(terms), chunk_id))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [RankedChunk(chunk_id=c, rank=i, score=s) for i, (s, c) in enumerate(scored[:limit], start=1)]

    def nearest(
        self,
        tenant_id: str,
        collections: frozenset[str],
        embedding: Sequence[float],
        *,
        embedding_model: str,
        limit: int,
        filters: SearchFilters,
        constraints: QueryConstraints = NO_CONSTRAINTS,
    ) -> list[RankedChunk]:
        return []


def _holds_constraints(words: list[str], constraints: QueryConstraints) -> bool:
    def holds(phrase: str) -> bool:
        wanted = words_of(phrase)
        return any(words[start : start + len(wanted)] == wanted for start in range(len(words) - len(wanted) + 1))

    return all(holds(phrase) for phrase in constraints.phrases) and not any(map(holds, constraints.excluded))


class NoGenerator:
    """No answer model configured (as locally): answers are evidence only."""

    model_id = "none"
    prompt_version = "none"

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.unavailable("generator", "no text generator in these tests: answers are evidence only")

    def generate(self, question: str, evidence: Sequence[EvidenceBlock]) -> GeneratedDraft:
        raise AssertionError("an unavailable generator is never asked")


@dataclass
class WritingServices:
    """One set of fakes (tests/fakes.py's `Fakes` for files, content, knowledge; tests/fakes_writing.py's stores)
    and the services built over them. Renders are queued on `queue`; `render_all()` runs them as the worker does."""

    fakes: Fakes = field(default_factory=Fakes)
    artifact_store: FakeArtifactStore = field(default_factory=FakeArtifactStore)
    queue: RecordingRenderQueue = field(default_factory=RecordingRenderQueue)
    artifact_limits: ArtifactLimits | None = None
    render_limits: RenderLimits = field(
        default_factory=lambda: RenderLimits(timeout_seconds=30, memory_limit_bytes=1024 * 1024 * 1024)
    )

    def __post_init__(self) -> None:
        self.export_store = FakeExportStore(artifacts=self.artifact_store)
        self.replacement_store = FakeReplacementStore(files=self.fakes.metadata)
        self.answer_store = FakeAnswerStore(chunks_of(self.fakes.knowledge.chunks))
        self.policy = ClaimsAuthorizationPolicy()

    @cached_property
    def artifacts(self) -> ArtifactService:
        return ArtifactService(
            self.artifact_store,
            self.fakes.content,
            self.policy,
            self.fakes.metadata,
            evidence=self.fakes.knowledge,
            markdown=MarkdownParser(),
            limits=self.artifact_limits,
        )

    @cached_property
    def exports(self) -> ExportService:
        return ExportService(
            self.export_store,
            self.artifacts,
            self.fakes.metadata,
            self.fakes.content,
            self.policy,
            queue=self.queue,
            renderers=export_renderers(),
            read_document=ExtractedDocuments(self.fakes.metadata, self.fakes.metadata, self.fakes.content).read,
            limits=self.render_limits,
        )

    @cached_property
    def pdf_tools(self) -> PdfTools:
        # As the Container: built with the exports, whose worker it teaches the PDF kind of rendering.
        return PdfTools(
            self.exports,
            self.artifacts,
            self.fakes.metadata,
            self.fakes.content,
            self.policy,
            operations=PypdfOperations(),
        )

    @cached_property
    def document_writer(self) -> DocumentWriter:
        return DocumentWriter(
            self.artifacts,
            self.exports,
            self.replacement_store,
            self.fakes.metadata,
            content=self.fakes.content,
            policy=self.policy,
        )

    def answers(
        self,
        generator: Generator | None = None,
        *,
        authorization: AuthorizationPolicy | None = None,
        embedder: EmbeddingProvider | None = None,
        **options: Any,
    ) -> AnswerService:
        """Over the keyword lane alone: ask with mode `keyword` for answers ranked by words, which may be cached.
        `authorization` replaces the policy where the answer is assembled (retrieval keeps the real one)."""
        lanes = FakeKeywordLane(self.fakes.knowledge)
        chosen = embedder or self.fakes.embedder
        retrieval = Retrieval(
            authorization=self.policy,
            knowledge=self.fakes.knowledge,
            vectors=lanes,
            keywords=lanes,
            embedder=chosen,
            tuning=RetrievalTuning(),
        )
        return AnswerService(
            authorization=authorization or self.policy,
            retrieval=retrieval,
            knowledge=self.fakes.knowledge,
            embedder=chosen,
            generator=generator or NoGenerator(),
            store=self.answer_store,
            metering=Metering(self.fakes.ledger),
            **options,
        )

    def render_all(self) -> None:
        """Run every queued render as the worker does (a PDF tool's too: the tools are built first)."""
        _ = self.pdf_tools
        for job in self.queue.drain():
            self.exports.render(job)

    # --- files ----------------------------------------------------------------------------------------------

    def stored_file(
        self, caller: Principal, body: bytes, *, filename: str, media_type: str, collection: str = "docs"
    ) -> UploadTicket:
        """An uploaded file version, stored (its processing requested, not run)."""
        ticket = self.fakes.files().start_upload(
            caller, collection_id=collection, filename=filename, media_type=media_type, byte_size=len(body)
        )
        landed = self.fakes.content.post(ticket.upload, body)
        self.fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
        return ticket

    def indexed_file(
        self, caller: Principal, body: bytes, *, filename: str = "notes.md", collection: str = "docs"
    ) -> UploadTicket:
        """An uploaded Markdown version, extracted and indexed by the real pipeline over the fakes."""
        ticket = self.stored_file(caller, body, filename=filename, media_type="text/markdown", collection=collection)
        self.fakes.pipeline().run(self.fakes.workflow.started[-1])
        return ticket

    def version(self, tenant_id: str, version_id: UUID) -> FileVersionRecord:
        found = self.fakes.metadata.find_version(tenant_id, version_id)
        assert found is not None
        return found[1]

    def chunk_ids(self, tenant_id: str, version_id: UUID) -> list[str]:
        """The version's chunks that hold text (what a citation can name), in document order."""
        return [
            chunk.chunk_id
            for chunk in self.fakes.knowledge.of_version(tenant_id, version_id)
            if chunk.draft.block_kind != BlockKind.HEADING.value
        ]
