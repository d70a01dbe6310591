"""The services of one process, built over one adapter set when first asked for (a cold start pays only for what a
request touches). `Container(settings, adapters=…)` is the one seam: the adapters of the runtime by default, or a
set with some parts given (a fake, in a test); every service is then built over them the one way it is built."""

from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any, Generic, TypeVar, overload
from uuid import UUID

from shared.bootstrap.adapters import Adapters, adapters_for
from shared.bootstrap.registries import document_parsers, export_renderers
from shared.bootstrap.steps import infrastructure_outage
from shared.config import Settings
from shared.domain.capabilities import Capability, CapabilityStatus
from shared.domain.chunk_situations import situating_model
from shared.domain.document import ExtractionLimits
from shared.domain.exports import RenderJob, RenderLimits
from shared.domain.limits import TenantLimits
from shared.domain.media import MediaLimits
from shared.domain.search import Fusion, RetrievalTuning
from shared.domain.workflow import ProcessVersion
from shared.ports import (
    AnswerStore,
    ArtifactStore,
    AuthorizationPolicy,
    ChunkSituator,
    DeliveryQueue,
    DocumentSummarizer,
    EmbeddingProvider,
    EventBus,
    EventOutbox,
    ExportStore,
    FileContentStore,
    FileMetadataStore,
    Generator,
    KeywordIndex,
    KnowledgeStore,
    MalwareScanning,
    MetadataWriter,
    MultipartStore,
    OcrProvider,
    RenderQueue,
    ReplacementStore,
    Reranker,
    SituationCache,
    TitleIndex,
    TokenVerifier,
    ToolCallAudit,
    TranscriptionProvider,
    UploadSessionStore,
    UsageLedger,
    VectorIndex,
    VisionProvider,
    WebhookSender,
    WebhookStore,
    Workflow,
)
from shared.services.answers import AnswerService, AnswerTuning
from shared.services.artifacts import ArtifactService
from shared.services.audit import ToolAuditLog
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.chunk_situations import ChunkSituations
from shared.services.document_writing import DocumentWriter
from shared.services.documents import DocumentReader
from shared.services.event_relay import EventRelay
from shared.services.exports import ExportService
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.extraction import Extractor
from shared.services.file_metadata import FileMetadataService
from shared.services.files import FileService, UploadLimits
from shared.services.indexing import Indexer
from shared.services.limits import SpendLimits
from shared.services.metering import Metering
from shared.services.page_images import PageImages
from shared.services.pdf_tools import PdfTools
from shared.services.pipeline import IngestionPipeline, StepRetry
from shared.services.recognition import Recognizers
from shared.services.reconciliation import ReconcileBudget, Reconciler, ReconcileThresholds
from shared.services.reindexing import Reindexer
from shared.services.request_rate import RequestRateLimiter
from shared.services.reranking import Reranking
from shared.services.retrieval import Retrieval
from shared.services.upload_completion import UploadCompletion
from shared.services.upload_sessions import UploadSessions
from shared.services.webhook_delivery import WebhookDeliverer
from shared.services.webhooks import WebhookService

Part = TypeVar("Part")


class _Adapter(Generic[Part]):
    """`container.content` and the like: the adapter of that name in the container's set."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, container: None, owner: type) -> "_Adapter[Part]": ...
    @overload
    def __get__(self, container: "Container", owner: type) -> Part: ...
    def __get__(self, container: "Container | None", owner: type) -> "Part | _Adapter[Part]":
        if container is None:
            return self
        part: Part = getattr(container.adapters, self._name)
        return part


class Container:
    """Services for one process over one adapter set."""

    database: _Adapter[Any] = _Adapter()
    file_metadata: _Adapter[FileMetadataStore] = _Adapter()
    metadata_writer: _Adapter[MetadataWriter] = _Adapter()
    content: _Adapter[FileContentStore] = _Adapter()
    multipart: _Adapter[MultipartStore] = _Adapter()
    upload_session_store: _Adapter[UploadSessionStore] = _Adapter()
    knowledge: _Adapter[KnowledgeStore] = _Adapter()
    vector_index: _Adapter[VectorIndex] = _Adapter()
    keyword_index: _Adapter[KeywordIndex] = _Adapter()
    title_index: _Adapter[TitleIndex] = _Adapter()
    usage_ledger: _Adapter[UsageLedger] = _Adapter()
    tool_audit: _Adapter[ToolCallAudit] = _Adapter()
    answer_store: _Adapter[AnswerStore] = _Adapter()
    artifact_store: _Adapter[ArtifactStore] = _Adapter()
    export_store: _Adapter[ExportStore] = _Adapter()
    replacement_store: _Adapter[ReplacementStore] = _Adapter()
    workflow: _Adapter[Workflow] = _Adapter()
    render_queue: _Adapter[RenderQueue] = _Adapter()
    token_verifier: _Adapter[TokenVerifier] = _Adapter()
    embedder: _Adapter[EmbeddingProvider] = _Adapter()
    ocr: _Adapter[OcrProvider] = _Adapter()
    vision: _Adapter[VisionProvider] = _Adapter()
    transcription: _Adapter[TranscriptionProvider] = _Adapter()
    malware_scanning: _Adapter[MalwareScanning] = _Adapter()
    generator: _Adapter[Generator] = _Adapter()
    summarizer: _Adapter[DocumentSummarizer] = _Adapter()
    reranker: _Adapter[Reranker | None] = _Adapter()
    situator: _Adapter[ChunkSituator] = _Adapter()
    situation_cache: _Adapter[SituationCache] = _Adapter()
    event_outbox: _Adapter[EventOutbox] = _Adapter()
    event_bus: _Adapter[EventBus] = _Adapter()
    delivery_queue: _Adapter[DeliveryQueue] = _Adapter()
    webhook_store: _Adapter[WebhookStore] = _Adapter()
    webhook_sender: _Adapter[WebhookSender] = _Adapter()

    def __init__(
        self, settings: Settings, adapters: Adapters | None = None, *, answer_tuning: AnswerTuning | None = None
    ) -> None:
        self.settings = settings
        self.adapters = adapters or adapters_for(settings)
        self.answer_tuning = answer_tuning or AnswerTuning()
        # In the local stack the workflow runs the pipeline and the render queue the export service, here.
        self.adapters.bind(runs=self._run, renders=self._render, delivers=self._deliver)

    @classmethod
    def adapter_parts(cls) -> frozenset[str]:
        """The names under which the container hands out its adapter set's parts (`container.content`, …)."""
        return frozenset(name for name, value in vars(cls).items() if isinstance(value, _Adapter))

    def _run(self, request: ProcessVersion) -> object:
        return self.pipeline.run(request)

    def _render(self, job: RenderJob) -> object:
        return self.exports.render(job)

    def _deliver(self, tenant_id: str | None, delivery_ids: Sequence[UUID]) -> object:
        if tenant_id is None:
            return self.webhook_deliverer.deliver_all()
        return self.webhook_deliverer.deliver_due(tenant_id, delivery_ids)

    # --- events and webhooks ------------------------------------------------------------------------------------

    @cached_property
    def event_relay(self) -> EventRelay:
        return EventRelay(self.event_outbox, self.event_bus, self.delivery_queue)

    @cached_property
    def webhook_deliverer(self) -> WebhookDeliverer:
        return WebhookDeliverer(self.webhook_store, self.webhook_sender, queue=self.delivery_queue)

    @cached_property
    def webhooks(self) -> WebhookService:
        return WebhookService(
            self.webhook_store,
            self.event_outbox,
            self.webhook_sender,
            self.delivery_queue,
            self.authorization,
            allow_loopback=self.settings.loopback_webhooks,
            allowed_ports=self.settings.webhook_ports,
        )

    # --- files and ingestion ------------------------------------------------------------------------------------

    @cached_property
    def authorization(self) -> AuthorizationPolicy:
        return ClaimsAuthorizationPolicy()

    @cached_property
    def files(self) -> FileService:
        return FileService(
            self.file_metadata,
            self.content,
            self.authorization,
            UploadLimits(
                max_bytes=self.settings.max_upload_bytes,
                url_lifetime=timedelta(seconds=self.settings.upload_url_lifetime_seconds),
                max_media_bytes=self.settings.max_media_bytes,
            ),
            spend=self.spend_limits,
            scanning=self.malware_scanning,
            sessions=self.upload_sessions,
        )

    @cached_property
    def upload_sessions(self) -> UploadSessions:
        return UploadSessions(
            self.upload_session_store,
            self.multipart,
            self.file_metadata,
            self.content,
            self.authorization,
            part_url_lifetime=timedelta(seconds=self.settings.upload_url_lifetime_seconds),
            abort_stale_uploads=self.settings.runtime == "local",
        )

    @cached_property
    def file_metadata_changes(self) -> FileMetadataService:
        return FileMetadataService(
            self.metadata_writer, self.file_metadata, self.authorization, reindex=self.reindexer.start_version
        )

    @cached_property
    def page_images(self) -> PageImages:
        return PageImages(
            self.files,
            self.content,
            self.adapters.page_rasterizer,
            max_original_bytes=self.settings.max_upload_bytes,
        )

    @cached_property
    def documents(self) -> ExtractedDocuments:
        return ExtractedDocuments(self.file_metadata, self.file_metadata, self.content)

    @cached_property
    def document_reader(self) -> DocumentReader:
        return DocumentReader(
            self.files,
            self.documents,
            attempts=self.file_metadata,
            workflow=self.workflow,
            ocr=self.ocr,
            summarizer=self.summarizer,
            policy=self.authorization,
            spend=self.spend_limits,
            metering=self.metering,
        )

    @cached_property
    def extractor(self) -> Extractor:
        limits = ExtractionLimits(
            max_bytes=self.settings.max_upload_bytes,
            max_pages=self.settings.extraction_max_pages,
            timeout_seconds=self.settings.extraction_timeout_seconds,
        )
        return Extractor(document_parsers(), limits, memory_limit_bytes=self.settings.extraction_memory_bytes)

    @cached_property
    def indexer(self) -> Indexer:
        return Indexer(
            self.knowledge,
            self.embedder,
            self.adapters.language_detector,
            max_chunk_tokens=self.settings.chunk_max_tokens,
        )

    @cached_property
    def pipeline(self) -> IngestionPipeline:
        from shared.adapters.parsers.media_probe import probe_media

        return IngestionPipeline(
            self.file_metadata,
            self.file_metadata,
            self.content,
            self.extractor,
            self.indexer,
            recognizers=Recognizers(ocr=self.ocr, vision=self.vision, transcription=self.transcription),
            media_limits=MediaLimits(max_seconds=self.settings.max_media_seconds),
            media_probe=probe_media,
            ledger=self.usage_ledger,
            spend=self.spend_limits,
            # Step Functions retries a step's infrastructure errors on AWS; the local runner does the same.
            retry=StepRetry(transient=infrastructure_outage) if self.adapters.local else None,
            situations=ChunkSituations(self.situator, self.situation_cache, spend=self.spend_limits),
        )

    @cached_property
    def upload_completion(self) -> UploadCompletion:
        return self._upload_completion(stale_after=timedelta(seconds=self.settings.reconcile_stuck_after_seconds))

    def _upload_completion(self, *, stale_after: timedelta) -> UploadCompletion:
        return UploadCompletion(
            self.file_metadata,
            self.file_metadata,
            self.content,
            self.workflow,
            self.malware_scanning,
            stale_after=stale_after,
        )

    @cached_property
    def reindexer(self) -> Reindexer:
        return Reindexer(
            self.file_metadata,
            self.file_metadata,
            self.knowledge,
            self.documents,
            workflow=self.workflow,
            embedder=self.embedder,
            spend=self.spend_limits,
            policy=self.authorization,
            context_model=self.context_model,
        )

    @cached_property
    def context_model(self) -> str | None:
        """The model (and prompt) that writes chunks' situating sentences, None where none does: a version situated
        by another, by none, or with a gap is stale (shared/domain/staleness.py)."""
        if not self.situator.capability().available:
            return None
        return situating_model(self.situator.model_id, self.situator.prompt_version)

    @cached_property
    def reconciler(self) -> Reconciler:
        thresholds = ReconcileThresholds(
            pending_after=timedelta(seconds=self.settings.reconcile_pending_after_seconds),
            stuck_after=timedelta(seconds=self.settings.reconcile_stuck_after_seconds),
        )
        return self._reconciler(thresholds, self.upload_completion)

    def reconciler_after_restart(self) -> Reconciler:
        """The local stack's sweep as it starts: nothing it was running before survived its stop (or its crash),
        so lost uploads are completed and interrupted processing and renders are taken up again at once, not
        after the usual thresholds. Pending uploads whose bytes never came still wait for their URLs to expire."""
        thresholds = ReconcileThresholds.after_restart(
            pending_after=timedelta(seconds=self.settings.reconcile_pending_after_seconds)
        )
        return self._reconciler(thresholds, self._upload_completion(stale_after=timedelta(0)), from_the_top=True)

    def _reconciler(
        self, thresholds: ReconcileThresholds, completion: UploadCompletion, *, from_the_top: bool = False
    ) -> Reconciler:
        return Reconciler(
            self.file_metadata,
            self.file_metadata,
            self.content,
            completion,
            thresholds,
            progress=self.adapters.sweep_progress,
            budget=ReconcileBudget(
                tenants=timedelta(seconds=self.settings.reconcile_tenants_budget_seconds),
                per_tenant=timedelta(seconds=self.settings.reconcile_tenant_turn_seconds),
            ),
            renders=self.exports,
            derived_owners=(self.artifacts, self.document_writer),
            from_the_top=from_the_top,
            purges=(self.event_outbox, self.webhook_store),
            sessions=self.upload_sessions,
        )

    # --- search and answers -------------------------------------------------------------------------------------

    @cached_property
    def retrieval_tuning(self) -> RetrievalTuning:
        """The settings' retrieval numbers; the semantic floor, unless set, is the embedding model's own."""
        settings = self.settings
        return RetrievalTuning(
            fusion=Fusion(settings.search_fusion),
            vector_weight=settings.search_vector_weight,
            uncovered_vector_weight=settings.search_uncovered_vector_weight,
            rrf_k=settings.search_rrf_k,
            semantic_floor=(
                settings.search_semantic_floor
                if settings.search_semantic_floor is not None
                else self.embedder.similarity_scale.unrelated
            ),
            fused_floor=settings.search_fused_floor,
            candidates=settings.search_candidates,
            context_budget_characters=settings.search_context_budget_characters,
            bm25_k1=settings.search_bm25_k1,
            bm25_b=settings.search_bm25_b,
            context_weight=settings.search_context_weight,
        )

    @cached_property
    def retrieval(self) -> Retrieval:
        return Retrieval(
            authorization=self.authorization,
            knowledge=self.knowledge,
            vectors=self.vector_index,
            keywords=self.keyword_index,
            embedder=self.embedder,
            tuning=self.retrieval_tuning,
            reranking=self.reranking,
            titles=self.title_index,
            languages=self.adapters.language_detector,
        )

    @cached_property
    def reranking(self) -> Reranking | None:
        """The reranker step of every search: the adapter set's reranker (a Bedrock rerank model, else the identifier
        booster, else none) within its budget, a metered one under the tenant's daily rerank limit."""
        reranker = self.reranker
        if reranker is None:
            return None
        return Reranking(
            reranker,
            budget_seconds=self.settings.rerank_budget_seconds,
            spend=self.spend_limits,
            metering=self.metering,
        )

    @cached_property
    def answers(self) -> AnswerService:
        """Grounded answers over the caller's collections: generated when a model is configured, else extractive."""
        return AnswerService(
            authorization=self.authorization,
            retrieval=self.retrieval,
            knowledge=self.knowledge,
            embedder=self.embedder,
            generator=self.generator,
            store=self.answer_store,
            spend=self.spend_limits,
            metering=self.metering,
            tuning=self.answer_tuning,
        )

    # --- writing and exports ------------------------------------------------------------------------------------

    @cached_property
    def artifacts(self) -> ArtifactService:
        return ArtifactService(
            self.artifact_store,
            self.content,
            self.authorization,
            self.file_metadata,
            evidence=self.knowledge,
            markdown=self.adapters.markdown_parser,
        )

    @property
    def exports(self) -> ExportService:
        return self._export_services[0]

    @property
    def pdf_tools(self) -> PdfTools:
        """Merging, splitting, watermarking and composing PDFs."""
        return self._export_services[1]

    @cached_property
    def _export_services(self) -> tuple[ExportService, PdfTools]:
        """Built together: the PDF tools add their kind of rendering to the export worker, which must know it
        however it was reached (the render function never asks for the tools)."""
        exports = ExportService(
            self.export_store,
            self.artifacts,
            self.file_metadata,
            self.content,
            self.authorization,
            queue=self.render_queue,
            renderers=export_renderers(),
            read_document=self.documents.read,
            limits=RenderLimits(
                max_pages=self.settings.render_max_pages,
                max_bytes=self.settings.max_upload_bytes,
                timeout_seconds=self.settings.render_timeout_seconds,
                memory_limit_bytes=self.settings.extraction_memory_bytes,
            ),
        )
        tools = PdfTools(
            exports,
            self.artifacts,
            self.file_metadata,
            self.content,
            self.authorization,
            operations=self.adapters.pdf_operations,
        )
        return exports, tools

    @cached_property
    def document_writer(self) -> DocumentWriter:
        return DocumentWriter(
            self.artifacts,
            self.exports,
            self.replacement_store,
            self.file_metadata,
            content=self.content,
            policy=self.authorization,
        )

    # --- audit and limits ---------------------------------------------------------------------------------------

    @cached_property
    def spend_limits(self) -> SpendLimits:
        """The tenants' daily spend limits, checked against the usage ledger and the file versions."""
        settings = self.settings
        # 0 in a setting is unlimited.
        limits = TenantLimits(
            ocr_pages_per_day=settings.limit_ocr_pages_per_day or None,
            vision_images_per_day=settings.limit_vision_images_per_day or None,
            embedding_tokens_per_day=settings.limit_embedding_tokens_per_day or None,
            generation_tokens_per_day=settings.limit_generation_tokens_per_day or None,
            rerank_queries_per_day=settings.limit_rerank_queries_per_day or None,
            transcription_minutes_per_day=settings.limit_transcription_minutes_per_day or None,
            upload_bytes_per_day=settings.limit_upload_bytes_per_day or None,
            rescans_per_file_per_hour=settings.limit_rescans_per_file_per_hour or None,
        )
        return SpendLimits(self.usage_ledger, self.file_metadata, limits)

    @cached_property
    def request_rate(self) -> RequestRateLimiter | None:
        """Requests per tenant per second in this instance (None: unlimited)."""
        rate = self.settings.limit_requests_per_second
        return RequestRateLimiter(rate, burst=self.settings.limit_request_burst) if rate else None

    @cached_property
    def metering(self) -> Metering:
        """The usage ledger's writer for model calls made inside a request (answers, summaries)."""
        return Metering(self.usage_ledger)

    @cached_property
    def audit_log(self) -> ToolAuditLog:
        """Agent tool calls recorded as they end, and read back by the collections' admins."""
        return ToolAuditLog(self.tool_audit, self.authorization)

    def capabilities(self) -> dict[Capability, CapabilityStatus]:
        return {
            Capability.EMBEDDER: self.embedder.capability(),
            Capability.OCR: self.ocr.capability(),
            Capability.VISION: self.vision.capability(),
            Capability.TRANSCRIPTION: self.transcription.capability(),
            Capability.GENERATOR: self.generator.capability(),
            Capability.SUMMARIZER: self.summarizer.capability(),
            Capability.CHUNK_CONTEXT: self.situator.capability(),
            Capability.MALWARE_SCANNING: self.malware_scanning.capability(),
        }
