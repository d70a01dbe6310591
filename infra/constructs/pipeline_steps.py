"""The pipeline's Lambda functions, one per step: handler, timeout, memory and what each may touch in storage;
and the errors the state machine retries. The state machine's shape comes from `shared.domain.steps.PIPELINE`
(infra/constructs/pipeline.py builds it)."""

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from infra.constructs.functions import acknowledge
from infra.constructs.storage import DERIVED_PREFIX, OCR_STAGING_PREFIX, ORIGINALS_PREFIX
from infra.constructs.tenant_data import TenantDataAccess, tenant_scoped
from shared.domain.steps import StepName

# The error names a step's failure carries when retrying may help: the Lambda service's own errors, and
# `InfrastructureUnavailable`, which the handlers raise for a database or AWS API that did not answer
# (`workflow_step` in shared/bootstrap/steps.py). Everything else is not retried: the same input gives the same answer.
RETRIED_ERRORS = (
    "InfrastructureUnavailable",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
)
# A function killed at its own timeout (or out of memory: Step Functions reports both as Lambda.Unknown on
# older runtimes): once more, in case it was a slow dependency rather than the input.
TIMEOUT_ERRORS = ("Sandbox.Timedout", "States.Timeout", "Lambda.Unknown")
OCR_POLL_SECONDS = 10
# Textract's actions the recognize step calls; Textract has no resource-level permissions.
TEXTRACT_ACTIONS = (
    "textract:DetectDocumentText",
    "textract:AnalyzeDocument",
    "textract:StartDocumentAnalysis",
    "textract:GetDocumentAnalysis",
    "textract:StartDocumentTextDetection",
    "textract:GetDocumentTextDetection",
)

# Transcribe's actions the recognize step calls: StartTranscriptionJob has no resource type (its output's bucket and
# key are its condition keys); a job's Get and Delete name the job, which Quire names `quire-<run>`
# (shared/adapters/aws/transcribe.py's JOB_PREFIX).
TRANSCRIBE_START = "transcribe:StartTranscriptionJob"
TRANSCRIBE_JOB_ACTIONS = ("transcribe:GetTranscriptionJob", "transcribe:DeleteTranscriptionJob")
TRANSCRIPTION_JOB_PREFIX = "quire-"


def grant_recognition_engines(access: TenantDataAccess, *, bucket_name: str) -> None:
    """What the recognize step's tenant session calls besides storage: Textract and Transcribe. Both read S3 (and
    Transcribe writes its output) with their caller's permissions, so called with the tenant's session they reach
    only that tenant's objects. A transcription may be started only with its output in `bucket_name` under the
    session's tenant's derived prefix; its Get and Delete name Quire's jobs."""
    access.grant(iam.PolicyStatement(actions=list(TEXTRACT_ACTIONS), resources=["*"]))
    access.grant(
        iam.PolicyStatement(
            actions=[TRANSCRIBE_START],
            resources=["*"],
            conditions={
                "StringEquals": {"transcribe:OutputBucketName": bucket_name},
                "StringLike": {"transcribe:OutputKey": f"{tenant_scoped(DERIVED_PREFIX)}*"},
            },
        )
    )
    jobs = cdk.Stack.of(access).format_arn(
        service="transcribe", resource="transcription-job", resource_name=f"{TRANSCRIPTION_JOB_PREFIX}*"
    )
    access.grant(iam.PolicyStatement(actions=list(TRANSCRIBE_JOB_ACTIONS), resources=[jobs]))
    acknowledge(
        access.role,
        "IAM5[Resource::*]",
        "Textract's actions, and Transcribe's StartTranscriptionJob, have no resource-level permissions; what "
        "Textract and Transcribe may read and write is bounded by this role's S3 grants (one tenant's originals, "
        "derived objects and staging prefix), and a transcription's output by its condition keys.",
    )
    acknowledge(
        access.role,
        "IAM5[Resource::arn:<AWS::Partition>:transcribe:<AWS::Region>:<AWS::AccountId>:transcription-job/"
        f"{TRANSCRIPTION_JOB_PREFIX}*]",
        "Transcription jobs are named per run (quire-<version>-<attempt>): the prefix is the narrowest name for "
        "them, and the actions (Get, Delete) are listed one by one.",
    )


@dataclass(frozen=True)
class Step:
    """One Lambda-backed state: its function's handler, timeout, memory and what it may touch in storage."""

    name: StepName
    handler: str
    description: str
    timeout_seconds: int
    memory_mb: int
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    delete: tuple[str, ...] = ()
    listing: tuple[str, ...] = ()
    ephemeral_mib: int = 512
    # Reads a key that may be missing and acts on its absence (S3 answers 404 only to a caller that may list).
    missing_is_not_found: bool = False


STEPS = (
    Step(
        StepName.INSPECT,
        "functions.inspect.handler.handler",
        "claims a stored version for this attempt",
        30,
        512,
        # A re-index asks whether the version's extracted document is still stored (then chunk, not extract).
        read=(DERIVED_PREFIX,),
        missing_is_not_found=True,
    ),
    Step(
        StepName.EXTRACT,
        "functions.extract.handler.handler",
        "extracts the text layer and structure in a sandboxed child process",
        # The extraction sandbox's own clock (QUIRE_EXTRACTION_TIMEOUT_SECONDS, 120 s) stops a parser first.
        300,
        3008,
        read=(ORIGINALS_PREFIX, DERIVED_PREFIX),
        write=(DERIVED_PREFIX,),
        delete=(DERIVED_PREFIX,),
        ephemeral_mib=2048,
    ),
    Step(
        StepName.RECOGNIZE,
        "functions.recognize.handler.handler",
        "starts or polls OCR (Textract) of the pages without text, describes images, and starts or polls the"
        " transcription (Transcribe) of a recording",
        300,
        2048,
        read=(ORIGINALS_PREFIX, DERIVED_PREFIX, OCR_STAGING_PREFIX),
        write=(DERIVED_PREFIX, OCR_STAGING_PREFIX),
        delete=(DERIVED_PREFIX, OCR_STAGING_PREFIX),
        ephemeral_mib=2048,
    ),
    Step(
        StepName.CHUNK,
        "functions.chunk.handler.handler",
        "cuts the document into chunks, stored in batches",
        300,
        1769,
        read=(DERIVED_PREFIX,),
        write=(DERIVED_PREFIX,),
    ),
    Step(
        StepName.EMBED,
        "functions.embed.handler.handler",
        "embeds one batch of chunks with Bedrock",
        300,
        512,
        read=(DERIVED_PREFIX,),
        write=(DERIVED_PREFIX,),
    ),
    Step(
        StepName.INDEX,
        "functions.index.handler.handler",
        "swaps the version's chunks and vectors into the index",
        300,
        1769,
        read=(DERIVED_PREFIX,),
        # Without listing, S3 answers a missing batch with 403 rather than 404.
        listing=(DERIVED_PREFIX,),
        # The batches are fetched to /tmp before the swap (a 20,000-chunk version: about 200 MB).
        ephemeral_mib=2048,
    ),
    Step(
        StepName.PUBLISH,
        "functions.publish.handler.handler",
        "removes the attempt's intermediate work",
        60,
        256,
        delete=(DERIVED_PREFIX,),
        listing=(DERIVED_PREFIX,),
    ),
    Step(
        StepName.RECORD_FAILURE,
        "functions.record_failure.handler.handler",
        "records an infrastructure failure on the version (the workflow's Catch)",
        60,
        256,
        delete=(DERIVED_PREFIX,),
        listing=(DERIVED_PREFIX,),
    ),
)
