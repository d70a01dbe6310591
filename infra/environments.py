"""Per-environment settings for the CDK app, chosen with `cdk deploy -c env=<name>`."""

from dataclasses import dataclass
from typing import Literal

# The Bedrock embedding models the runtime reads (shared/bootstrap/adapters.py's AwsAdapters.embedder), both
# multilingual and both giving vectors of the column's 1,024 dimensions (infra/constructs/functions.py).
EMBEDDING_MODELS = ("amazon.titan-embed-text-v2:0", "cohere.embed-multilingual-v3")
# The Bedrock rerank models the runtime calls (shared/adapters/aws/bedrock_rerank.py), each where its region offers
# it: Cohere Rerank 3.5 in us-east-1, us-west-2, ca-central-1, eu-central-1 and ap-northeast-1; Amazon Rerank 1.0 in
# the same but us-east-1.
RERANK_MODELS = ("cohere.rerank-v3-5:0", "amazon.rerank-v1:0")

# Lambda refuses a reservation that would leave fewer than this many unreserved executions in the account and
# region (the pool every function without a reservation, and the account's other workloads, share).
UNRESERVED_CONCURRENCY_MINIMUM = 100
# Lambda's default concurrency quota per account and region, which the reservations below are sized against.
DEFAULT_ACCOUNT_CONCURRENCY = 1000


@dataclass(frozen=True)
class ReservedConcurrency:
    """Concurrent executions set aside for (and capping) each function, so an upload flood fills the pipeline's
    reservations and queues there (Step Functions retries a throttled task; Lambda's asynchronous queue keeps a
    throttled event for hours) while the API and sign-in keep their own."""

    api: int
    # The MCP server (infra/constructs/mcp.py): the agent tools, its own share so agents cannot take the API's.
    mcp: int
    # Cognito's pre-token-generation trigger: without it nobody signs in.
    sign_in: int
    on_object_created: int
    # Each of the eight step functions (infra/constructs/pipeline_steps.py) and, when scanning, the malware
    # verdict's.
    pipeline_step: int
    render: int
    # One sweep at a time: two overlapping sweeps would only repeat each other's work.
    reconcile: int
    # The event relay runs a minute and a bit, once a minute: two at a time at most (infra/constructs/events.py).
    relay: int = 2
    # The webhook deliverer: the queue's pollers (WEBHOOK_POLLERS, fewer than this) and the minute's sweep.
    deliver_webhooks: int = 10


@dataclass(frozen=True)
class ConsoleDomain:
    """A name of one's own for the console's distribution (infra/constructs/console.py), so that its viewers get
    TLS 1.2 at least (the distribution's own *.cloudfront.net name keeps CloudFront's policy). The certificate is
    an ACM certificate in us-east-1 (CloudFront's requirement) that covers the name; the DNS record pointing the
    name at the distribution is the operator's."""

    name: str
    certificate_arn: str


@dataclass(frozen=True)
class EnvironmentSettings:
    name: str
    # prod keeps data when the stack is deleted; dev cleans up after itself.
    retain_data: bool
    log_retention_days: int
    cors_allowed_origins: tuple[str, ...]
    noncurrent_version_retention_days: int
    # Aurora Serverless v2 capacity in ACUs. 0 lets an idle dev cluster pause (the first request after a
    # pause waits while it resumes; the workflow's retries cover that).
    aurora_min_capacity: float
    aurora_max_capacity: float
    # powertools' log level for every function.
    log_level: str
    # Where alarms are sent (an SNS e-mail subscription); None: the topic exists, nobody is subscribed.
    alarm_email: str | None
    # How often reconciliation runs (EventBridge Scheduler expression).
    reconcile_schedule: str
    # HTTP API stage throttling, per account and region: steady requests per second and burst.
    api_rate_limit: int
    api_burst_limit: int
    # Database backups, in days.
    backup_retention_days: int
    # A second Aurora instance in another zone to fail over to.
    aurora_failover_reader: bool
    # The Bedrock image model that describes images (Converse); None: images are OCR'd only, and say why.
    vision_model_id: str | None
    # None: no reservation at all (a new account's concurrency quota is often 10, below the 100 Lambda keeps
    # unreserved, so any reservation would fail the deployment). Sized against the default quota of 1,000.
    reserved_concurrency: ReservedConcurrency | None = None
    # "guardduty": GuardDuty Malware Protection for S3 scans every upload, and its verdict (not the upload
    # itself) starts processing. Off by default: it is priced per GB scanned.
    malware_scanning: Literal["off", "guardduty"] = "off"
    # The Bedrock model that writes summarize_document's cited summaries (Converse with citations: a Claude model
    # that supports them, its access enabled in the account). None: summaries are extractive outlines, and say so.
    summary_model_id: str | None = None
    # The Bedrock model that drafts POST /v1/answer's answers (Converse with a forced tool: Claude 3 or later, or
    # Amazon Nova, its access enabled in the account). None: answers are evidence only, and say so.
    answer_model_id: str | None = None
    # The Bedrock model (or inference profile) that writes each chunk's situating sentence in the embed step (Converse:
    # Claude Haiku, say, its access enabled in the account; docs/search.md#contextual-chunks). None: chunks are
    # indexed under their deterministic context only. Priced per chunk: metered, under the tenants' generation limit.
    chunk_context_model_id: str | None = None
    # None: the console is served on its distribution's *.cloudfront.net name.
    console_domain: ConsoleDomain | None = None
    # NAT gateways of the webhook deliverer's way out to customers' endpoints (infra/constructs/database.py): one
    # (~32 USD a month plus traffic) or one per zone (two), so that a zone's outage does not stop deliveries.
    webhook_nat_gateways: int = 1
    # The Bedrock embedding model (one of EMBEDDING_MODELS): every function gets it as
    # QUIRE_BEDROCK_EMBEDDING_MODEL_ID, and the embed step and the API and MCP functions may invoke it alone.
    # Changing it on a deployed environment makes every stored vector stale: re-index (docs/deployment.md).
    embedding_model_id: str = EMBEDDING_MODELS[0]
    # The Bedrock rerank model (one of RERANK_MODELS, offered in the stack's region) that reorders each search's best
    # candidates: the API and MCP functions get it as QUIRE_RERANK_MODEL_ID and may call it alone, through an agent
    # runtime endpoint in the VPC. None: the identifier booster reranks (docs/search.md#the-reranker).
    rerank_model_id: str | None = None

    def __post_init__(self) -> None:
        if self.embedding_model_id not in EMBEDDING_MODELS:
            raise ValueError(
                f"{self.name}: embedding_model_id {self.embedding_model_id!r} is not one Quire reads: choose one"
                f" of {', '.join(EMBEDDING_MODELS)}"
            )
        if self.rerank_model_id is not None and self.rerank_model_id not in RERANK_MODELS:
            raise ValueError(
                f"{self.name}: rerank_model_id {self.rerank_model_id!r} is not one Quire calls: choose one of"
                f" {', '.join(RERANK_MODELS)} (where the stack's region offers it), or None"
            )


ENVIRONMENTS: dict[str, EnvironmentSettings] = {
    "dev": EnvironmentSettings(
        name="dev",
        retain_data=False,
        log_retention_days=14,
        cors_allowed_origins=("http://localhost:3000", "http://127.0.0.1:3000"),
        noncurrent_version_retention_days=30,
        aurora_min_capacity=0,
        aurora_max_capacity=2,
        log_level="DEBUG",
        alarm_email=None,
        reconcile_schedule="rate(15 minutes)",
        api_rate_limit=50,
        api_burst_limit=100,
        backup_retention_days=1,
        aurora_failover_reader=False,
        vision_model_id=None,
    ),
    "prod": EnvironmentSettings(
        name="prod",
        retain_data=True,
        log_retention_days=365,
        cors_allowed_origins=("https://app.quire.example.com",),
        noncurrent_version_retention_days=3650,
        aurora_min_capacity=0.5,
        aurora_max_capacity=16,
        log_level="INFO",
        alarm_email="oncall@quire.example.com",
        reconcile_schedule="rate(15 minutes)",
        api_rate_limit=500,
        api_burst_limit=1000,
        backup_retention_days=30,
        aurora_failover_reader=True,
        vision_model_id="amazon.nova-lite-v1:0",
        # 200 + 50 + 20 + 50 + 9 x 50 + 50 + 1 + 2 + 10 = 833 of the default 1,000, leaving 167 unreserved (>= 100;
        # a test sums the template's reservations). The API's
        # 200 is twice what 500 requests a second at 200 ms need; the stage's throttle turns away the rest. The
        # MCP server's 50: an agent's calls are sequential, and its tools are the API's services.
        reserved_concurrency=ReservedConcurrency(
            api=200, mcp=50, sign_in=20, on_object_created=50, pipeline_step=50, render=50, reconcile=1
        ),
        webhook_nat_gateways=2,
    ),
}


def settings_for(name: str) -> EnvironmentSettings:
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        known = ", ".join(sorted(ENVIRONMENTS))
        raise ValueError(f"unknown environment {name!r}: choose one of {known} with -c env=<name>") from None
