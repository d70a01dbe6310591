"""Composition root: the one place that turns settings into adapters.

Handlers ask this module for what they need; services receive ports; nothing else constructs an
adapter. Local and AWS differ only here.
"""

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar, cast

from shared.adapters.local.unavailable import (
    UnavailableEmbedder,
    UnavailableGenerator,
    UnavailableMalwareScanning,
    UnavailableRenderQueue,
    UnavailableSummarizer,
    UnavailableTranscription,
    UnavailableVision,
    UnavailableWorkflow,
)
from shared.adapters.transient import is_transient
from shared.config import Settings
from shared.domain.capabilities import Capability, CapabilityStatus
from shared.domain.document import ExtractionLimits
from shared.domain.errors import InfrastructureUnavailable
from shared.domain.exports import ExportFormat, RenderLimits
from shared.domain.limits import TenantLimits
from shared.domain.search import Fusion, IdentifierBooster, RetrievalTuning
from shared.domain.steps import StepInput, StepOutcome
from shared.domain.uploads import parse_storage_key
from shared.ports import (
    AnswerStore,
    ArtifactRenderer,
    ArtifactStore,
    AuthorizationPolicy,
    DocumentParser,
    DocumentSummarizer,
    EmbeddingProvider,
    ExportStore,
    FileContentStore,
    FileMetadataStore,
    Generator,
    KeywordIndex,
    KnowledgeStore,
    MalwareScanning,
    OcrProvider,
    RenderQueue,
    ReplacementStore,
    TitleIndex,
    TokenVerifier,
    ToolCallAudit,
    TranscriptionProvider,
    UsageLedger,
    VectorIndex,
    VisionProvider,
    Workflow,
)
from shared.services.answers import AnswerService
from shared.services.artifacts import ArtifactService
from shared.services.audit import ToolAuditLog
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.document_writing import DocumentWriter
from shared.services.documents import DocumentReader
from shared.services.exports import ExportService
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.extraction import Extractor
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
from shared.services.retrieval import Retrieval
from shared.services.upload_completion import UploadCompletion

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

    from shared.adapters.aws.tenant_credentials import TenantCredentials
    from shared.adapters.postgres.database import Database

_NO_LOCAL_VISION = "no vision model runs locally; on AWS set QUIRE_VISION_MODEL_ID to a Bedrock image model"
_NO_VISION_MODEL = "QUIRE_VISION_MODEL_ID is not set, so no image descriptions are made"
_NO_LOCAL_MALWARE_SCANNER = (
    "no malware scanner runs locally: uploads are processed unscanned; on AWS an environment's malware_scanning"
    " setting turns on GuardDuty Malware Protection for S3"
)
_MALWARE_SCANNING_OFF = "malware scanning is off in this environment (infra/environments.py malware_scanning)"
_NO_LOCAL_TRANSCRIPTION = "no transcription engine runs locally; on AWS Amazon Transcribe provides it"
_NO_TRANSCRIBE = "the Amazon Transcribe adapter is not in this build yet"
_NO_LOCAL_GENERATOR = "no text generator runs locally: answers are evidence only"
_NO_ANSWER_MODEL = "QUIRE_ANSWER_MODEL_ID is not set: answers are evidence only"
_NO_LOCAL_SUMMARIZER = "no text generator runs locally: summaries are extractive outlines"
_NO_SUMMARY_MODEL = "QUIRE_SUMMARY_MODEL_ID is not set: summaries are extractive outlines"


class ConfigurationError(Exception):
    """Settings that cannot build a working composition; the message names the setting to fix."""


# Whose data the current call touches: a request's caller, a step's version, an event's key. On AWS, S3 and
# Textract calls are made with that tenant's session (QUIRE_TENANT_DATA_ROLE_ARN), and refused without one.
_acting_tenant: ContextVar[str | None] = ContextVar("quire_acting_tenant", default=None)
AwsClient = TypeVar("AwsClient")


@contextmanager
def acting_for_tenant(tenant_id: str) -> Iterator[None]:
    """Within this block, tenant data is touched on behalf of `tenant_id` only."""
    token = _acting_tenant.set(tenant_id)
    try:
        yield
    finally:
        _acting_tenant.reset(token)


def acting_tenant() -> str | None:
    return _acting_tenant.get()


@contextmanager
def acting_for_owner_of(storage_key: str) -> Iterator[None]:
    """For an event that names an object: act for the tenant its key claims (the service then checks the claim
    against its row). A key Quire never hands out names no tenant, and nothing is read for it."""
    parts = parse_storage_key(storage_key)
    if parts is None:
        yield
        return
    with acting_for_tenant(parts.tenant_id):
        yield


@dataclass
class Container:
    """Adapters for one process, built lazily so a cold start pays only for what a request touches."""

    settings: Settings

    # SDK-backed adapters are imported where they are built: a function that never touches the database
    # never imports psycopg. (botocore is imported anyway, by the powertools tracer's X-Ray SDK.)

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
                endpoint, rds_auth_token(self._rds_client, endpoint), max_size=settings.database_pool_size
            )
        if settings.database_url is None:
            raise ConfigurationError("QUIRE_DATABASE_URL is not set (the application role's connection)")
        return Database(settings.database_url.get_secret_value(), max_size=settings.database_pool_size)

    def _rds_client(self) -> object:
        import boto3

        # Only signs IAM authentication tokens (locally, no request is sent).
        return boto3.client("rds", region_name=self.settings.region)

    @cached_property
    def file_metadata(self) -> FileMetadataStore:
        from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore

        return PostgresFileMetadataStore(self.database)

    @cached_property
    def content(self) -> FileContentStore:
        from shared.adapters.aws.s3_content_store import S3ContentStore

        return S3ContentStore(self._tenant_scoped(self._s3_client), self.settings.bucket)

    def _tenant_scoped(self, build: Callable[..., AwsClient]) -> Callable[[], AwsClient]:
        """`build` itself, or on AWS with a tenant data role, a factory of a client that makes each call with
        the acting tenant's session (`build` given that session's credentials)."""
        if self._local or self.settings.tenant_data_role_arn is None:
            return build
        from shared.adapters.aws.tenant_credentials import TenantClients, TenantRoutedClient

        clients = TenantClients(
            self._tenant_credentials, lambda session: build(**session.client_credentials()), acting_tenant
        )
        # It answers every attribute the client would, with the acting tenant's client's.
        return lambda: cast(AwsClient, TenantRoutedClient(clients))

    @cached_property
    def _tenant_credentials(self) -> "TenantCredentials":
        from shared.adapters.aws.tenant_credentials import TenantCredentials

        assert self.settings.tenant_data_role_arn is not None
        return TenantCredentials(
            self._sts_client, self.settings.tenant_data_role_arn, session_name=f"quire-{self.settings.environment}"
        )

    def _sts_client(self) -> object:
        import boto3

        # The regional endpoint, which the VPC's STS interface endpoint answers.
        region = self.settings.region
        return boto3.client("sts", region_name=region, endpoint_url=f"https://sts.{region}.amazonaws.com")

    def _s3_client(
        self,
        aws_access_key_id: str | None = None,
        aws_secret_access_key: str | None = None,
        aws_session_token: str | None = None,
    ) -> "S3Client":
        import boto3
        from botocore.config import Config

        local = self.settings.s3_endpoint_url
        return boto3.client(
            "s3",
            region_name=self.settings.region,
            # The acting tenant's session when tenant-scoped; else (all None) the process's own credentials.
            aws_access_key_id=aws_access_key_id,
            aws_secret_access_key=aws_secret_access_key,
            aws_session_token=aws_session_token,
            # On AWS the regional endpoint, named: left to itself botocore signs presigned POSTs and GETs for
            # the global `bucket.s3.amazonaws.com`, which newer regions refuse and others answer with a
            # redirect a browser's upload (and a signature over the host) does not survive.
            endpoint_url=local or f"https://s3.{self.settings.region}.amazonaws.com",
            # SigV4 presigned URLs (X-Amz-Expires); path style so a local endpoint needs no DNS per bucket.
            config=Config(
                signature_version="s3v4",
                retries={"mode": "standard"},
                s3={"addressing_style": "path" if local else "virtual"},
            ),
        )

    @cached_property
    def files(self) -> FileService:
        return FileService(
            self.file_metadata,
            self.content,
            self.authorization,
            UploadLimits(
                max_bytes=self.settings.max_upload_bytes,
                url_lifetime=timedelta(seconds=self.settings.upload_url_lifetime_seconds),
            ),
            spend=self.spend_limits,
            scanning=self.malware_scanning,
        )

    @cached_property
    def page_images(self) -> PageImages:
        from shared.adapters.renderers.page_image import PdfiumPageRasterizer

        return PageImages(
            self.files, self.content, PdfiumPageRasterizer(), max_original_bytes=self.settings.max_upload_bytes
        )

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
    def extractor(self) -> Extractor:
        parsers = document_parsers()
        limits = ExtractionLimits(
            max_bytes=self.settings.max_upload_bytes,
            max_pages=self.settings.extraction_max_pages,
            timeout_seconds=self.settings.extraction_timeout_seconds,
        )
        return Extractor(parsers, limits, memory_limit_bytes=self.settings.extraction_memory_bytes)

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
    def indexer(self) -> Indexer:
        return Indexer(self.knowledge, self.embedder, max_chunk_tokens=self.settings.chunk_max_tokens)

    @cached_property
    def usage_ledger(self) -> UsageLedger:
        from shared.adapters.postgres.usage import PostgresUsageLedger

        return PostgresUsageLedger(self.database)

    @cached_property
    def metering(self) -> Metering:
        """The usage ledger's writer for model calls made inside a request (answers, summaries)."""
        return Metering(self.usage_ledger)

    @cached_property
    def tool_audit(self) -> ToolCallAudit:
        from shared.adapters.postgres.tool_calls import PostgresToolCallAudit

        return PostgresToolCallAudit(self.database)

    @cached_property
    def answer_store(self) -> AnswerStore:
        from shared.adapters.postgres.answers import PostgresAnswerStore

        return PostgresAnswerStore(self.database)

    @cached_property
    def audit_log(self) -> ToolAuditLog:
        """Agent tool calls recorded as they end, and read back by the collections' admins."""
        return ToolAuditLog(self.tool_audit, self.authorization)

    @cached_property
    def pipeline(self) -> IngestionPipeline:
        return IngestionPipeline(
            self.file_metadata,
            self.file_metadata,
            self.content,
            self.extractor,
            self.indexer,
            recognizers=Recognizers(ocr=self.ocr, vision=self.vision),
            ledger=self.usage_ledger,
            spend=self.spend_limits,
            # Step Functions retries a step's infrastructure errors on AWS; the local runner does the same.
            retry=StepRetry(transient=infrastructure_outage) if self._local else None,
        )

    @cached_property
    def documents(self) -> ExtractedDocuments:
        return ExtractedDocuments(self.file_metadata, self.file_metadata, self.content)

    @cached_property
    def artifact_store(self) -> ArtifactStore:
        from shared.adapters.postgres.artifacts import PostgresArtifactStore

        return PostgresArtifactStore(self.database)

    @cached_property
    def artifacts(self) -> ArtifactService:
        from shared.adapters.parsers.markdown import MarkdownParser

        return ArtifactService(
            self.artifact_store,
            self.content,
            self.authorization,
            self.file_metadata,
            evidence=self.knowledge,
            markdown=MarkdownParser(),
        )

    @cached_property
    def export_store(self) -> ExportStore:
        from shared.adapters.postgres.exports import PostgresExportStore

        return PostgresExportStore(self.database)

    @cached_property
    def render_queue(self) -> RenderQueue:
        if self._local:
            from shared.adapters.local.render_queue import InProcessRenderQueue

            # Late-bound: the export service is built with this queue, so it is looked up per job.
            return InProcessRenderQueue(lambda job: self.exports.render(job))  # noqa: PLW0108
        if self.settings.render_function_name is None:
            return UnavailableRenderQueue("QUIRE_RENDER_FUNCTION_NAME is not set, so no export can be rendered")
        from shared.adapters.aws.lambda_render_queue import LambdaRenderQueue

        return LambdaRenderQueue(self._lambda_client, self.settings.render_function_name)

    def _lambda_client(self) -> object:
        import boto3

        return boto3.client("lambda", region_name=self.settings.region)

    @property
    def exports(self) -> ExportService:
        return self._export_services[0]

    @property
    def pdf_tools(self) -> PdfTools:
        return self._export_services[1]

    @cached_property
    def _export_services(self) -> tuple[ExportService, PdfTools]:
        """Built together: the PDF tools add their kind of rendering to the export worker, which must know it
        however it was reached (the render function never builds the tools on its own)."""
        from shared.adapters.pdf_operations import PypdfOperations

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
            exports, self.artifacts, self.file_metadata, self.content, self.authorization, operations=PypdfOperations()
        )
        return exports, tools

    @cached_property
    def replacement_store(self) -> ReplacementStore:
        from shared.adapters.postgres.replacements import PostgresReplacementStore

        return PostgresReplacementStore(self.database)

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
    def retrieval(self) -> Retrieval:
        settings = self.settings
        return Retrieval(
            authorization=self.authorization,
            knowledge=self.knowledge,
            vectors=self.vector_index,
            keywords=self.keyword_index,
            embedder=self.embedder,
            tuning=RetrievalTuning(
                fusion=Fusion(settings.search_fusion),
                vector_weight=settings.search_vector_weight,
                rrf_k=settings.search_rrf_k,
                semantic_floor=settings.search_semantic_floor,
                fused_floor=settings.search_fused_floor,
                candidates=settings.search_candidates,
                context_budget_characters=settings.search_context_budget_characters,
                bm25_k1=settings.search_bm25_k1,
                bm25_b=settings.search_bm25_b,
            ),
            reranker=IdentifierBooster() if settings.search_identifier_boost else None,
            titles=self.title_index,
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
        )

    @cached_property
    def title_index(self) -> TitleIndex:
        from shared.adapters.postgres.title_lane import PostgresTitleIndex

        return PostgresTitleIndex(self.database)

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
        )

    @cached_property
    def workflow(self) -> Workflow:
        if self._local:
            from shared.adapters.local.workflow import InProcessWorkflow

            return InProcessWorkflow(self.pipeline.run)
        if self.settings.state_machine_arn is None:
            return UnavailableWorkflow("QUIRE_STATE_MACHINE_ARN is not set, so no processing can be started")
        from shared.adapters.aws.step_functions_workflow import StepFunctionsWorkflow

        return StepFunctionsWorkflow(self._stepfunctions_client, self.settings.state_machine_arn)

    def _stepfunctions_client(self) -> object:
        import boto3

        return boto3.client("stepfunctions", region_name=self.settings.region)

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
        from shared.adapters.postgres.sweep_progress import PostgresSweepProgress

        return Reconciler(
            self.file_metadata,
            self.file_metadata,
            self.content,
            completion,
            thresholds,
            progress=PostgresSweepProgress(self.database),
            budget=ReconcileBudget(
                tenants=timedelta(seconds=self.settings.reconcile_tenants_budget_seconds),
                per_tenant=timedelta(seconds=self.settings.reconcile_tenant_turn_seconds),
            ),
            renders=self.exports,
            derived_owners=(self.artifacts, self.document_writer),
            from_the_top=from_the_top,
        )

    @cached_property
    def authorization(self) -> AuthorizationPolicy:
        return ClaimsAuthorizationPolicy()

    @cached_property
    def token_verifier(self) -> TokenVerifier:
        """Bearer tokens verified in the function (the MCP server's; the REST API's are verified by the gateway
        on AWS): Cognito access tokens with the gateway authorizer's checks on AWS, the local stack's own tokens
        locally (the key shared/local/supervisor.py hands the local API)."""
        settings = self.settings
        if self._local:
            from shared.adapters.local.jwt_tokens import LocalTokenVerifier
            from shared.adapters.local.secret_files import read_or_create_secret

            if settings.jwt_secret_file is None:
                raise ConfigurationError("QUIRE_JWT_SECRET_FILE is not set (the local stack's token key)")
            return LocalTokenVerifier(read_or_create_secret(settings.jwt_secret_file))
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

    @property
    def _local(self) -> bool:
        return self.settings.runtime == "local"

    @cached_property
    def embedder(self) -> EmbeddingProvider:
        dimension = self.settings.embedding_dimension
        if self._local:
            from shared.adapters.local.onnx_embeddings import OnnxMiniLmEmbedder

            return OnnxMiniLmEmbedder(dimension=dimension)
        from shared.adapters.aws.bedrock_embeddings import BedrockTitanEmbedder

        try:
            return BedrockTitanEmbedder.from_region(
                self.settings.region, dimension=dimension, model_id=self.settings.bedrock_embedding_model_id
            )
        except ValueError as error:  # a dimension Titan does not offer: said, not guessed around
            return UnavailableEmbedder(str(error), dimension=dimension)

    @cached_property
    def ocr(self) -> OcrProvider:
        if self._local:
            from shared.adapters.local.rapid_ocr import RapidOcr

            return RapidOcr()
        from shared.adapters.aws.textract_ocr import TextractOcr

        return TextractOcr.from_region(self.settings.region, bucket=self.settings.bucket, scoped=self._tenant_scoped)

    @cached_property
    def vision(self) -> VisionProvider:
        if self._local:
            return UnavailableVision(_NO_LOCAL_VISION)
        if self.settings.vision_model_id is None:
            return UnavailableVision(_NO_VISION_MODEL)
        from shared.adapters.aws.bedrock_vision import BedrockConverseVision

        return BedrockConverseVision.from_region(self.settings.region, self.settings.vision_model_id)

    @cached_property
    def transcription(self) -> TranscriptionProvider:
        return UnavailableTranscription(_NO_LOCAL_TRANSCRIPTION if self._local else _NO_TRANSCRIBE)

    @cached_property
    def malware_scanning(self) -> MalwareScanning:
        if self._local:
            return UnavailableMalwareScanning(_NO_LOCAL_MALWARE_SCANNER)
        if self.settings.malware_scanning == "off":
            return UnavailableMalwareScanning(_MALWARE_SCANNING_OFF)
        from shared.adapters.aws.guardduty_scanning import GuardDutyMalwareScanning

        return GuardDutyMalwareScanning()

    @cached_property
    def generator(self) -> Generator:
        """A model's structured draft of an answer (POST /v1/answer); without one, answers are evidence only."""
        if self._local:
            return UnavailableGenerator(_NO_LOCAL_GENERATOR)
        if self.settings.answer_model_id is None:
            return UnavailableGenerator(_NO_ANSWER_MODEL)
        from shared.adapters.aws.bedrock_answers import BedrockConverseGenerator

        return BedrockConverseGenerator.from_region(self.settings.region, self.settings.answer_model_id)

    @cached_property
    def summarizer(self) -> DocumentSummarizer:
        """A model's cited summary of one document (summarize_document); without one, the tool's outline."""
        if self._local:
            return UnavailableSummarizer(_NO_LOCAL_SUMMARIZER)
        if self.settings.summary_model_id is None:
            return UnavailableSummarizer(_NO_SUMMARY_MODEL)
        from shared.adapters.aws.bedrock_summaries import BedrockConverseSummarizer

        return BedrockConverseSummarizer.from_region(self.settings.region, self.settings.summary_model_id)

    def capabilities(self) -> dict[Capability, CapabilityStatus]:
        return {
            Capability.EMBEDDER: self.embedder.capability(),
            Capability.OCR: self.ocr.capability(),
            Capability.VISION: self.vision.capability(),
            Capability.TRANSCRIPTION: self.transcription.capability(),
            Capability.GENERATOR: self.generator.capability(),
            Capability.SUMMARIZER: self.summarizer.capability(),
            Capability.MALWARE_SCANNING: self.malware_scanning.capability(),
        }


StepRequest = TypeVar("StepRequest", bound=StepInput)
LambdaStep = Callable[[dict[str, Any], Any], dict[str, Any]]


def infrastructure_outage(error: BaseException) -> bool:
    """Whether `error` is the infrastructure not answering (the database restarting, a throttled service), which a
    later try may not meet, rather than a bug: the API answers the first 503 with Retry-After."""
    return isinstance(error, InfrastructureUnavailable) or is_transient(error)


def workflow_step(reads: type[StepRequest]) -> Callable[[Callable[[StepRequest, Any], StepOutcome]], LambdaStep]:
    """A pipeline step's Lambda handler: the event parsed as `reads` (the step's input model), the outcome
    returned as the state machine carries it (`to_state`).

    How it reports failure to the workflow: a document problem never raises (the step records it and
    returns). Of what does raise, an infrastructure error is re-raised as `InfrastructureUnavailable`, the
    error name the state machine's Retry matches (with back-off); anything else keeps its own name and goes
    straight to the Catch, which records the interruption."""

    def decorate(handler: Callable[[StepRequest, Any], StepOutcome]) -> LambdaStep:
        @functools.wraps(handler)
        def step(event: dict[str, Any], context: Any) -> dict[str, Any]:
            try:
                request = reads.of(event)
                with acting_for_tenant(request.tenant_id):
                    return handler(request, context).to_state()
            except InfrastructureUnavailable:
                raise
            except Exception as error:
                if is_transient(error):
                    raise InfrastructureUnavailable(f"{type(error).__name__}: {error}"[:1000]) from error
                raise

        step.reads = reads  # type: ignore[attr-defined]  # the model a test checks against the graph
        return step

    return decorate


def cognito_signing_keys(issuer_url: str) -> str:
    """A user pool's public signing keys, read from its JWKS endpoint now, as the JSON QUIRE_COGNITO_JWKS holds
    (the deploy-time snapshot functions/cognito_keys takes)."""
    from shared.adapters.aws.cognito_tokens import snapshot_signing_keys

    return snapshot_signing_keys(issuer_url)


def export_renderers() -> dict[ExportFormat, ArtifactRenderer]:
    """One renderer per export format."""
    from shared.adapters.renderers.docx import DocxRenderer
    from shared.adapters.renderers.html import HtmlRenderer
    from shared.adapters.renderers.markdown import MarkdownRenderer
    from shared.adapters.renderers.pdf import PdfRenderer
    from shared.adapters.renderers.plain import CsvRenderer, TextRenderer, XlsxRenderer

    renderers: list[ArtifactRenderer] = [
        PdfRenderer(),
        DocxRenderer(),
        HtmlRenderer(),
        MarkdownRenderer(),
        TextRenderer(),
        CsvRenderer(),
        XlsxRenderer(),
    ]
    return {renderer.format: renderer for renderer in renderers}


def document_parsers() -> list[DocumentParser]:
    """Every parser the pipeline's Extractor chooses from, by media type."""
    from shared.adapters.parsers.csv_table import CsvParser
    from shared.adapters.parsers.docx import DocxParser
    from shared.adapters.parsers.html import HtmlParser
    from shared.adapters.parsers.image import ImageParser
    from shared.adapters.parsers.markdown import MarkdownParser
    from shared.adapters.parsers.pdf import PdfParser
    from shared.adapters.parsers.plain_text import PlainTextParser
    from shared.adapters.parsers.pptx import PptxParser
    from shared.adapters.parsers.xlsx import XlsxParser

    return [
        PdfParser(),
        DocxParser(),
        XlsxParser(),
        PptxParser(),
        HtmlParser(),
        MarkdownParser(),
        CsvParser(),
        PlainTextParser(),
        ImageParser(),
    ]
