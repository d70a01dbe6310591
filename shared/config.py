"""Typed settings, read once at the edge (a handler's import, the CLI's start) and passed inward."""

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# pgvector's HNSW index accepts `vector` columns up to 2,000 dimensions.
MAX_INDEXED_DIMENSION = 2000


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="QUIRE_", frozen=True, extra="ignore")

    runtime: Literal["local", "aws"] = "local"
    # The deployment's name (dev, prod): the dimension of the metrics functions publish.
    environment: str = Field(default="local", pattern=r"^[a-z][a-z0-9-]{0,31}$")
    # The application's connection: a role that is neither owner nor superuser and cannot bypass RLS.
    database_url: SecretStr | None = None
    database_pool_size: int = Field(default=4, ge=1, le=64)
    # On AWS: connect as `database_user` to `database_host` (the RDS Proxy) with IAM authentication; every
    # new pooled connection signs a fresh 15-minute token, over TLS. QUIRE_DATABASE_URL is then not used.
    database_iam_auth: bool = False
    database_host: str | None = None
    database_port: int = Field(default=5432, ge=1, le=65535)
    database_name: str | None = None
    database_user: str | None = None
    # The migrations' Lambda only: the Secrets Manager secret holding the owner's username and password
    # (managed and rotated by RDS); it connects to `database_host`, the cluster writer.
    database_owner_secret_arn: str | None = None
    bucket: str = "quire-local"
    # Set locally to the moto server; unset on AWS.
    s3_endpoint_url: str | None = None
    # On AWS, the role this function assumes per tenant (session tag tenant=<id>) for every S3 and Textract call
    # on tenant data (infra/constructs/tenant_data.py); unset, the function's own role makes them.
    tenant_data_role_arn: str | None = None
    region: str = Field(
        default="us-east-1", validation_alias=AliasChoices("QUIRE_REGION", "AWS_REGION", "AWS_DEFAULT_REGION")
    )
    # Honoured by the migrations (the `vector(N)` column); changing it needs a re-index migration.
    embedding_dimension: int = Field(default=384, ge=1, le=MAX_INDEXED_DIMENSION)
    # Uploads: the largest single POST, which is also the largest document (extraction reads a document whole; the
    # refusal names it), and the presigned URLs' lifetime (the POST's and each part's).
    max_upload_bytes: int = Field(default=100 * 1024 * 1024, ge=1)
    # The largest recording (audio or video), uploaded by parts: at most S3's largest object, 5 TiB.
    max_media_bytes: int = Field(default=10 * 1024**3, ge=1, le=5 * 1024**4)
    # Recordings (docs/transcription.md): the longest transcribed (the probe refuses longer ones, naming this; Amazon
    # Transcribe's own limit is 4 hours), and the local engine's Whisper model: tiny.en (English only, the fastest)
    # or base (multilingual, identifies the language).
    max_media_seconds: int = Field(default=4 * 3600, ge=1, le=4 * 3600)
    transcription_model: Literal["tiny.en", "base"] = "tiny.en"
    upload_url_lifetime_seconds: int = Field(default=900, ge=60, le=900)
    # Reconciliation: how long an upload may stay pending, and processing may stall, before it acts.
    reconcile_pending_after_seconds: int = Field(default=3600, ge=0)
    reconcile_stuck_after_seconds: int = Field(default=3600, ge=1)
    # Fairness: the tenants share this much of a run (the Lambda has 900 s; the object scan gets 120 s after),
    # and one tenant's turn takes at most `turn`; the next run resumes each tenant where its turn stopped.
    reconcile_tenants_budget_seconds: float = Field(default=600, gt=0, le=720)
    reconcile_tenant_turn_seconds: float = Field(default=60, gt=0, le=720)
    # The local stack reconciles as it starts (what a stop or a crash cut off is taken up at once) and then this
    # often, as EventBridge Scheduler does on AWS; 0 turns the repeat off (the start's sweep always runs).
    local_reconcile_interval_seconds: int = Field(default=900, ge=0)
    # "guardduty": GuardDuty Malware Protection for S3 scans every upload and only a clean verdict starts
    # processing (set by the CDK app when the environment turns it on); "off": files are processed unscanned.
    malware_scanning: Literal["off", "guardduty"] = "off"
    # Extraction bounds that differ by deployment (the rest are ExtractionLimits' defaults).
    extraction_timeout_seconds: float = Field(default=120, gt=0, le=900)
    extraction_max_pages: int = Field(default=2000, ge=1)
    extraction_memory_bytes: int = Field(default=2 * 1024 * 1024 * 1024, ge=256 * 1024 * 1024)
    # Indexing: chunks are at most this many of the embedding model's tokens (and never more than it reads).
    chunk_max_tokens: int = Field(default=256, ge=32, le=8192)
    # The local embedding model: MiniLM (English, fast) or multilingual-e5-small (about 100 languages, about ten
    # times slower on the CPU; docs/search.md#languages). Changing it makes every stored vector stale: re-index.
    local_embedding_model: Literal["minilm", "multilingual-e5-small"] = "minilm"
    # The Bedrock embedding model on AWS: amazon.titan-embed-text-v2:0 (256, 512 or 1024 dimensions:
    # QUIRE_EMBEDDING_DIMENSION) or cohere.embed-multilingual-v3 (1024 only); both multilingual. Anything else is
    # refused by name. Changing it makes every stored vector stale: re-index (docs/deployment.md#the-embedding-model).
    bedrock_embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    # Retrieval (docs/search.md, docs/adr/0004): chosen on the SciFact train split, never on test.
    search_fusion: Literal["zscore", "rrf"] = "zscore"  # docs/adr/0008
    search_vector_weight: float = Field(default=0.55, ge=0, le=1)
    # The vector lane's weight for a question in a language the embedding model does not cover (docs/adr/0011).
    search_uncovered_vector_weight: float = Field(default=0.1, ge=0, le=1)
    search_rrf_k: int = Field(default=10, ge=1)
    # None: the embedding model's own (its similarity_scale.unrelated: 0.6 for MiniLM, 0.88 for multilingual-e5-small).
    search_semantic_floor: float | None = Field(default=None, ge=0, le=1)
    search_fused_floor: float = Field(default=0.3, ge=0, le=1)
    search_candidates: int = Field(default=50, ge=1, le=1000)
    search_context_budget_characters: int = Field(default=12_000, ge=2_000)
    search_bm25_k1: float = Field(default=0.9, gt=0)
    search_bm25_b: float = Field(default=0.6, ge=0, le=1)
    search_context_weight: float = Field(default=1.0, ge=0, le=10)
    search_identifier_boost: bool = True
    # The reranker (docs/search.md#the-reranker). On AWS, a Bedrock rerank model (cohere.rerank-v3-5:0, or
    # amazon.rerank-v1:0 where the region offers it; any other id is refused by name) reorders the best
    # rerank_top_n fused candidates (at most 100: one priced query a search) within rerank_budget_seconds;
    # unset, and always locally, the identifier booster does when search_identifier_boost is on.
    rerank_model_id: str | None = None
    rerank_top_n: int = Field(default=50, ge=1, le=100)
    rerank_budget_seconds: float = Field(default=1.0, gt=0, le=10)
    # A Bedrock image-capable model; unset means vision is unavailable and says so.
    vision_model_id: str | None = None
    # A Bedrock model (or inference profile) that cites documents, for summarize_document; unset means summaries
    # are extractive outlines and say so.
    summary_model_id: str | None = None
    # A Bedrock model (or inference profile) that takes a forced tool (Anthropic Claude 3 or later, Amazon Nova),
    # for POST /v1/answer's drafts; unset means answers are evidence only and say so.
    answer_model_id: str | None = None
    # A Bedrock model (or inference profile) that Converse accepts, for each chunk's situating sentence (issue 37,
    # docs/search.md#contextual-chunks), written in the embed step; unset means chunks are indexed under their
    # deterministic context only and `quire status` says so. Locally there is none.
    chunk_context_model_id: str | None = None
    state_machine_arn: str | None = None
    # The render function exports are handed to on AWS (asynchronous invocation); unset there, none start.
    render_function_name: str | None = None
    render_timeout_seconds: float = Field(default=120.0, gt=0)
    render_max_pages: int = Field(default=2_000, ge=1)
    # Bearer tokens a function verifies itself (the MCP function: its routes have no gateway authorizer), on AWS
    # with API Gateway's JWT authorizer's checks (shared/adapters/aws/cognito_tokens.py): the user pool's issuer
    # (https://cognito-idp.<region>.amazonaws.com/<pool id>), the app client ids a token's aud (else client_id)
    # must name (comma-separated), the scope it must carry, and the pool's public signing keys as a JWKS
    # document taken at deploy time (unset: fetched from the issuer, which needs a route to Cognito).
    cognito_issuer_url: str | None = None
    cognito_client_ids: Annotated[tuple[str, ...], NoDecode] = ()
    cognito_required_scope: str = "quire/api"
    cognito_jwks: str | None = None
    # Locally: the key the stack signs its tokens with (.quire/jwt.key; set by the local supervisor).
    jwt_secret_file: Path | None = None

    # Spend and capacity per tenant (docs/configuration.md#limits), 0 meaning unlimited. Checked before the
    # money is spent; over one, the API answers 429 naming it and the pipeline records why it stopped.
    limit_ocr_pages_per_day: int = Field(default=5_000, ge=0)
    limit_vision_images_per_day: int = Field(default=1_000, ge=0)
    limit_embedding_tokens_per_day: int = Field(default=50_000_000, ge=0)
    # Input and output tokens of the model calls made inside requests (grounded answers, tool summaries) and of
    # chunks' situating sentences.
    limit_generation_tokens_per_day: int = Field(default=2_000_000, ge=0)
    # Calls of a Bedrock rerank model (one a search that reranks); past it, searches keep fusion order and say so.
    limit_rerank_queries_per_day: int = Field(default=20_000, ge=0)
    # Minutes of recording transcribed (whole minutes begun, per recording).
    limit_transcription_minutes_per_day: int = Field(default=600, ge=0)
    limit_upload_bytes_per_day: int = Field(default=10 * 1024**3, ge=0)
    limit_rescans_per_file_per_hour: int = Field(default=5, ge=0)
    # Per Lambda instance (an in-memory token bucket): API Gateway's stage throttle bounds the total. Off unless
    # set: a default low enough to matter would refuse the test suites' and the CLI's bursts.
    limit_requests_per_second: float = Field(default=0, ge=0)
    limit_request_burst: int = Field(default=200, ge=1)

    # Events and webhooks (docs/events.md). On AWS: the environment's EventBridge bus the relay publishes to, and the
    # SQS queue that wakes the delivery function (unset: the relay, or a wake-up, fails naming the setting).
    event_bus_name: str | None = None
    webhook_queue_url: str | None = None
    # Locally: the JSON-lines file the local bus archives every published event to (set by the local stack).
    event_archive_file: Path | None = None
    # Webhook receivers on this machine (http or https to loopback): the local stack's default; never on AWS.
    webhook_allow_loopback: bool | None = None
    # A PEM file of certificates a webhook's TLS may also chain to (a local receiver's self-signed certificate).
    webhook_ca_file: Path | None = None

    # The MCP endpoint (functions/mcp, docs/agent-tools.md#the-mcp-server), an OAuth resource server: the Host (and
    # Origin) headers it serves, comma-separated, "name:*" for any port (any other Host is answered 421); its
    # public URL (https://<api domain>/mcp); and the authorization server its tokens come from (on AWS the user
    # pool's issuer). The local stack sets the URLs to its API's.
    mcp_allowed_hosts: Annotated[tuple[str, ...], NoDecode] = ("127.0.0.1:*", "localhost:*", "[::1]:*")
    mcp_allowed_origins: Annotated[tuple[str, ...], NoDecode] = (
        "http://127.0.0.1:*",
        "http://localhost:*",
        "http://[::1]:*",
    )
    mcp_resource_url: str | None = None
    mcp_issuer_url: str | None = None

    @field_validator("cognito_client_ids", "mcp_allowed_hosts", "mcp_allowed_origins", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(client.strip() for client in value.split(",") if client.strip())
        return value

    @property
    def loopback_webhooks(self) -> bool:
        """Whether a webhook may go to this machine: locally unless turned off, never on AWS."""
        if self.runtime == "aws":
            return False
        return True if self.webhook_allow_loopback is None else self.webhook_allow_loopback

    @property
    def webhook_ports(self) -> frozenset[int] | None:
        """The ports a webhook URL may name: on AWS only 443 leaves the delivery function's network; any locally."""
        return frozenset({443}) if self.runtime == "aws" else None

    @model_validator(mode="after")
    def _pending_outlives_upload_urls(self) -> "Settings":
        # Reconciliation rejects a pending upload with no bytes: only safe once its URL can no longer be used.
        if self.reconcile_pending_after_seconds <= self.upload_url_lifetime_seconds:
            raise ValueError(
                "QUIRE_RECONCILE_PENDING_AFTER_SECONDS must exceed QUIRE_UPLOAD_URL_LIFETIME_SECONDS"
                f" ({self.upload_url_lifetime_seconds})"
            )
        # A version still being extracted must never look stuck, or a second attempt would race the first.
        if self.reconcile_stuck_after_seconds <= self.extraction_timeout_seconds:
            raise ValueError(
                "QUIRE_RECONCILE_STUCK_AFTER_SECONDS must exceed QUIRE_EXTRACTION_TIMEOUT_SECONDS"
                f" ({self.extraction_timeout_seconds:g})"
            )
        return self


@lru_cache(maxsize=1)
def load_settings() -> Settings:
    """The process's settings from its environment, read once."""
    return Settings()
