"""The OcrProvider on AWS: Amazon Textract, reading the originals where they are stored in S3 (a single image at once,
a PDF or a multi-page TIFF by an asynchronous job the workflow polls; only the pages that need OCR): how it stages
pages, maps them back, starts a job once, retries and which IAM it needs is in docs/ocr.md, "The Textract adapter".
"""

import hashlib
import logging
import random as _random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared import sandbox
from shared.adapters.aws.retrying import Backoff, LazyClient, check_attempts, error_code, error_message, retried
from shared.adapters.aws.textract_blocks import recognized_pages
from shared.domain.capabilities import Capability, CapabilityStatus
from shared.domain.errors import CapabilityUnavailable, RecognitionFailed
from shared.domain.recognition import (
    RecognitionJob,
    RecognitionResult,
)
from shared.domain.usage import Usage
from shared.ports import OcrProvider, OcrSource

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
else:
    S3Client = Any
# boto3-stubs for Textract are not a dependency: the client is untyped here.
TextractClient = Any

ENGINE = "textract"
PDF = "application/pdf"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"
SUPPORTED_MEDIA_TYPES = frozenset({PDF, PNG, JPEG, TIFF})
# Textract's set quota for any synchronous call, and for JPEG/PNG even in a job (a PDF or TIFF read by
# a job may have 500 MB and 3,000 pages).
SYNC_MAX_BYTES = 10 * 1024 * 1024
# The most blocks one Get call returns; the rest follow NextToken.
MAX_RESULTS = 1000
# A collected job is at most this many Get calls (1,000 blocks each): Textract's 3,000-page limit at a few
# hundred blocks a page fits well inside; a token that repeats, or an answer past this, is not followed.
MAX_RESPONSES = 2000

BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 10.0

# Worth another call after a pause: Textract or S3 is busy, or too many jobs already run in the account.
_RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "InternalServerError",
        "LimitExceededException",
        # S3
        "SlowDown",
        "InternalError",
        "ServiceUnavailable",
        "RequestTimeout",
        "500",
        "503",
    }
)
# A HEAD answers 403 without a body, so the bare status is all there is to go on.
_ACCESS_DENIED_CODES = frozenset({"AccessDeniedException", "AccessDenied", "403"})
# Textract refuses this document: the same call would be refused again, so it is recorded, not retried.
# The sentences reach the file's owner: they name the fix and never a storage key.
_DOCUMENT_PROBLEMS = {
    "UnsupportedDocumentException": (
        "Textract does not support this document's format: it reads JPEG, PNG, TIFF and PDF (not XFA forms)."
        " Convert the file to one of those and upload it again."
    ),
    "BadDocumentException": (
        "Textract could not read this document: it is damaged, password-protected, or not the format its"
        " type claims. Re-save or re-scan it and upload it again."
    ),
    "DocumentTooLargeException": (
        "The document is too large for Textract: an image may be at most 10 MB, and a PDF or TIFF at most"
        " 500 MB and 3,000 pages. Split it or reduce its resolution and upload it again."
    ),
    "InvalidS3ObjectException": (
        "Textract could not read the stored original. Scan the file again; if it fails again, upload it again."
    ),
    "InvalidParameterException": (
        "Textract refused the request for this document as invalid (a page or image size it does not accept,"
        " or a stored version it cannot use). Re-save the file with standard page sizes and upload it again."
    ),
}
_GONE_CODES = frozenset({"NoSuchKey", "NoSuchVersion", "404"})
# What the file's owner reads when AWS refuses this function an action; the action itself is logged.
OCR_NOT_PERMITTED = (
    "OCR is not permitted for this deployment yet: an operator must grant the OCR function the access it needs"
    " (the refused action is in its log)."
)
# The sandboxed copy of a PDF's pages: PDFium reads the tenant's file within these bounds.
PAGE_COPY_TIMEOUT_SECONDS = 60.0
PAGE_COPY_MEMORY_BYTES = 1024 * 1024 * 1024

_log = logging.getLogger(__name__)


class TextractOcr(OcrProvider):
    """Textract OCR over the originals in `bucket`.

    `textract` and `s3` are boto3 clients, or zero-argument factories for them called on first use (a
    function that never reads a page never builds a client). `sleep` and `random` are injected so the
    back-off can be tested without waiting.
    """

    def __init__(
        self,
        textract: "TextractClient | Callable[[], TextractClient]",
        s3: "S3Client | Callable[[], S3Client]",
        *,
        bucket: str,
        staging_prefix: str = "ocr-staging/",
        analyze_tables: bool = True,
        max_attempts: int = 5,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        self._textract: LazyClient[TextractClient] = LazyClient(textract)
        self._s3: LazyClient[S3Client] = LazyClient(s3)
        self._bucket = bucket
        self._staging_prefix = staging_prefix
        self._analyze_tables = analyze_tables
        self._max_attempts = check_attempts(max_attempts)
        self._sleep = sleep
        self._backoff = Backoff(BACKOFF_BASE_SECONDS, BACKOFF_CAP_SECONDS, random)

    @classmethod
    def from_region(
        cls,
        region: str,
        *,
        bucket: str,
        staging_prefix: str = "ocr-staging/",
        analyze_tables: bool = True,
        max_attempts: int = 5,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        scoped: Callable[[Callable[..., Any]], Callable[[], Any]] = lambda build: build,
    ) -> "TextractOcr":
        """An adapter whose clients are built on first use, with botocore's retries off (this class retries).
        `scoped` turns a client builder (taking credentials) into the factory used: on AWS, one making each call
        with the acting tenant's session, since Textract reads the pages from S3 as its caller."""

        def config() -> Any:
            from botocore.config import Config

            return Config(
                retries={"total_max_attempts": 1, "mode": "standard"},
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
            )

        # Built with the session's keys when scoped, else with the process's own credentials (all None).
        def build_textract(
            aws_access_key_id: str | None = None,
            aws_secret_access_key: str | None = None,
            aws_session_token: str | None = None,
        ) -> TextractClient:
            import boto3

            return boto3.client(
                "textract",
                region_name=region,
                config=config(),
                aws_access_key_id=aws_access_key_id,
                aws_secret_access_key=aws_secret_access_key,
                aws_session_token=aws_session_token,
            )

        def build_s3(
            aws_access_key_id: str | None = None,
            aws_secret_access_key: str | None = None,
            aws_session_token: str | None = None,
        ) -> S3Client:
            import boto3

            return boto3.client(
                "s3",
                region_name=region,
                config=config(),
                aws_access_key_id=aws_access_key_id,
                aws_secret_access_key=aws_secret_access_key,
                aws_session_token=aws_session_token,
            )

        return cls(
            scoped(build_textract),
            scoped(build_s3),
            bucket=bucket,
            staging_prefix=staging_prefix,
            analyze_tables=analyze_tables,
            max_attempts=max_attempts,
        )

    def capability(self) -> CapabilityStatus:
        # No probe call: a missing permission shows up as CapabilityUnavailable on the first page read.
        return CapabilityStatus.ready(provider=ENGINE)

    def start(self, source: OcrSource) -> RecognitionResult | RecognitionJob:
        if source.media_type not in SUPPORTED_MEDIA_TYPES:
            raise RecognitionFailed(
                f"Textract reads JPEG, PNG, TIFF and PDF, not {source.media_type}: convert the file to one of those."
            )
        if source.pages is not None and not source.pages:
            raise ValueError("no pages to read: pass None to read every page")
        if source.media_type in (PNG, JPEG) or (source.media_type == TIFF and source.page_count == 1):
            size = self._stored_size(source)
            if size <= SYNC_MAX_BYTES:
                return self._detect_now(source)
            if source.media_type != TIFF:
                # A job would be refused the same way, after a wait: say so now.
                raise RecognitionFailed(
                    f"The image is {size / 1024 / 1024:.1f} MB; Textract reads images of at most 10 MB."
                    " Reduce its resolution or save it as JPEG and upload it again."
                )
        return self._start_job(source)

    def discard(self, job: RecognitionJob) -> None:
        """Nobody will collect the job: remove its staged copy (the job itself expires at Textract)."""
        if job.staged_key is None:
            return
        try:
            self._delete_staged(job.staged_key)
        except Exception:
            # The staging prefix's lifecycle rule removes it within a day anyway.
            _log.exception("could not remove the staged copy of job %s", job.job_id)

    def collect(self, job: RecognitionJob) -> RecognitionResult | None:
        responses = self._job_responses(job)
        if responses is None:
            return None
        if job.staged_key is not None:
            staged_pages = job.pages

            def original_page(job_page: int) -> int | None:
                return staged_pages[job_page - 1] if 1 <= job_page <= len(staged_pages) else None

        else:
            wanted = frozenset(job.pages)

            def original_page(job_page: int) -> int | None:
                return job_page if not wanted or job_page in wanted else None

        pages = recognized_pages(responses, original_page)
        # Removed only once parsed: a response that cannot be parsed leaves everything for the retry.
        if job.staged_key is not None:
            self._delete_staged(job.staged_key)
        return RecognitionResult(engine=ENGINE, pages=pages, usage=_usage(job.analysis, responses[0]))

    # The synchronous read of one image.

    def _detect_now(self, source: OcrSource) -> RecognitionResult:
        response = self._call(
            "textract:DetectDocumentText",
            self._textract.get().detect_document_text,
            Document={"S3Object": self._original_location(source)},
        )
        pages = recognized_pages([response], lambda job_page: job_page)
        return RecognitionResult(engine=ENGINE, pages=pages, usage=_usage(False, response))

    def _stored_size(self, source: OcrSource) -> int:
        parameters: dict[str, Any] = {"Bucket": self._bucket, "Key": source.storage_key}
        action = "s3:GetObject"
        if source.storage_version_id:
            parameters["VersionId"] = source.storage_version_id
            action = "s3:GetObjectVersion"
        try:
            head = self._call(action, self._s3.get().head_object, **parameters)
        except ClientError as error:
            if error_code(error) in _GONE_CODES:
                raise RecognitionFailed(
                    "The stored original is gone, so there is nothing for Textract to read: upload the file again."
                ) from error
            raise
        return int(head["ContentLength"])

    # The asynchronous job.

    def _start_job(self, source: OcrSource) -> RecognitionJob:
        token = request_token(source, analysis=self._analyze_tables)
        staged_key: str | None = None
        location = self._original_location(source)
        job_pages: tuple[int, ...]
        if source.media_type == PDF and source.pages is not None and not _covers_every_page(source):
            subset = _pdf_of_pages_isolated(source.read(), source.pages)
            if subset is not None:
                # Under the original's key, so deleting the original finds (and removes) the copy of its pages.
                staged_key = f"{self._staging_prefix}{source.storage_key}/{token}.pdf"
                self._call(
                    "s3:PutObject",
                    self._s3.get().put_object,
                    Bucket=self._bucket,
                    Key=staged_key,
                    Body=subset,
                    ContentType=PDF,
                )
                # Every version at this key holds the same pages: none is pinned, so a start delivered
                # again (after putting another version) sends Textract the very same request.
                location = {"Bucket": self._bucket, "Name": staged_key}
        if source.pages is not None:
            job_pages = source.pages
        elif source.page_count is not None:
            job_pages = tuple(range(1, source.page_count + 1))
        else:
            job_pages = ()
        action, operation, extra = self._start_operation()
        try:
            response = self._call(
                action,
                operation,
                DocumentLocation={"S3Object": location},
                ClientRequestToken=token,
                **extra,
            )
        except RecognitionFailed:
            if staged_key is not None:
                self._delete_staged(staged_key)
            raise
        return RecognitionJob(
            engine=ENGINE,
            job_id=response["JobId"],
            analysis=self._analyze_tables,
            pages=job_pages,
            staged_key=staged_key,
        )

    def _start_operation(self) -> tuple[str, Callable[..., Any], dict[str, Any]]:
        textract = self._textract.get()
        if self._analyze_tables:
            return "textract:StartDocumentAnalysis", textract.start_document_analysis, {"FeatureTypes": ["TABLES"]}
        return "textract:StartDocumentTextDetection", textract.start_document_text_detection, {}

    def _job_responses(self, job: RecognitionJob) -> list[dict[str, Any]] | None:
        """Every response page of a finished job, or None while it runs."""
        textract = self._textract.get()
        if job.analysis:
            action, operation = "textract:GetDocumentAnalysis", textract.get_document_analysis
        else:
            action, operation = "textract:GetDocumentTextDetection", textract.get_document_text_detection
        responses: list[dict[str, Any]] = []
        next_token: str | None = None
        seen_tokens: set[str] = set()
        while True:
            if len(responses) >= MAX_RESPONSES:
                raise RecognitionFailed(
                    f"Textract's answer ran past {MAX_RESPONSES} pages of results: split the document and upload"
                    " the parts"
                )
            parameters: dict[str, Any] = {"JobId": job.job_id, "MaxResults": MAX_RESULTS}
            if next_token is not None:
                parameters["NextToken"] = next_token
            response = self._call(action, operation, **parameters)
            status = response.get("JobStatus")
            if status == "IN_PROGRESS":
                return None
            if status == "FAILED":
                if job.staged_key is not None:
                    self._delete_staged(job.staged_key)
                message = response.get("StatusMessage")
                raise RecognitionFailed(
                    f"Textract failed on the document: {message}"
                    if message
                    else "Textract failed on the document without saying why: re-save or re-scan it and upload it"
                    " again."
                )
            if response.get("Warnings"):
                # PARTIAL_SUCCESS: the pages Textract could not read are simply absent from the result.
                _log.warning("textract job %s (%s): %s", job.job_id, status, response["Warnings"])
            responses.append(response)
            next_token = response.get("NextToken")
            if not next_token:
                return responses
            if next_token in seen_tokens:
                raise RecognitionFailed("Textract's answer repeated itself (the same NextToken twice): scan it again")
            seen_tokens.add(next_token)

    def _delete_staged(self, key: str) -> None:
        """Remove every version of the staged copy (and delete markers), so no copied page stays behind."""
        s3 = self._s3.get()
        markers: dict[str, str] = {}
        while True:
            listing = self._call(
                "s3:ListBucketVersions", s3.list_object_versions, Bucket=self._bucket, Prefix=key, **markers
            )
            for entry in (*listing.get("Versions", []), *listing.get("DeleteMarkers", [])):
                # The prefix also matches longer keys: only this exact key is ours.
                if entry["Key"] != key:
                    continue
                try:
                    self._call(
                        "s3:DeleteObjectVersion",
                        s3.delete_object,
                        Bucket=self._bucket,
                        Key=key,
                        VersionId=entry["VersionId"],
                    )
                except ClientError as error:
                    if error_code(error) not in _GONE_CODES:
                        raise
            if not listing.get("IsTruncated"):
                return
            markers = {"KeyMarker": listing["NextKeyMarker"], "VersionIdMarker": listing["NextVersionIdMarker"]}

    # Shared plumbing.

    def _original_location(self, source: OcrSource) -> dict[str, str]:
        location = {"Bucket": self._bucket, "Name": source.storage_key}
        if source.storage_version_id:
            location["Version"] = source.storage_version_id
        return location

    def _call(self, action: str, operation: Callable[..., Any], **parameters: Any) -> Any:
        """One AWS call, retried while the service is busy; refusals classified (see the module docstring)."""

        def refuse(error: ClientError) -> None:
            code = error_code(error)
            if code in _ACCESS_DENIED_CODES:
                # The action to grant is the operator's to read, in the log: never the file owner's.
                _log.error("AWS refused %s (%s): grant %s to the function's role", action, code, action)
                raise CapabilityUnavailable(Capability.OCR.value, OCR_NOT_PERMITTED) from error
            if code in _DOCUMENT_PROBLEMS:
                _log.info("textract refused the document: %s: %s", code, error_message(error))
                raise RecognitionFailed(_DOCUMENT_PROBLEMS[code]) from error

        return retried(
            lambda: operation(**parameters),
            max_attempts=self._max_attempts,
            retryable_codes=_RETRYABLE_CODES,
            backoff=self._backoff,
            sleep=self._sleep,
            refuse=refuse,
        )


def request_token(source: OcrSource, *, analysis: bool) -> str:
    """Textract's ClientRequestToken for reading `source`: the same read always gets the same token.

    Hex SHA-256: 64 characters, the most Textract accepts, all within its [a-zA-Z0-9-_] alphabet.
    """
    pages = "all" if source.pages is None else ",".join(str(page) for page in source.pages)
    operation = "analysis" if analysis else "text"
    identity = "\n".join((source.storage_key, source.storage_version_id or "", pages, operation, source.run_id))
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()


def _covers_every_page(source: OcrSource) -> bool:
    return source.pages is None or (
        source.page_count is not None and source.pages == tuple(range(1, source.page_count + 1))
    )


_PAGE_COPY_OUT_OF_MEMORY = "copying out the pages that need OCR ran out of memory"


def _pdf_of_pages_isolated(content: bytes, pages: Sequence[int]) -> bytes | None:
    """`_pdf_of_pages` in the sandbox's child: PDFium parses the tenant's PDF with no credentials, no socket
    and no process of its own, bounded in time and memory."""
    # Validated: never trust the shape of what a process that parsed hostile input sends back.
    answer = sandbox.sandboxed(
        _pdf_of_pages_in_child,
        sandbox.pack({"pages": list(pages)}, content),
        sandbox.unpack,
        timeout_seconds=PAGE_COPY_TIMEOUT_SECONDS,
        memory_limit_bytes=PAGE_COPY_MEMORY_BYTES,
        max_answer_bytes=len(content) * 2 + 1024 * 1024,
        answer_too_large=sandbox.pack({"failed": _PAGE_COPY_OUT_OF_MEMORY}),
    )
    unreadable = "PDFium's answer could not be read: re-save the PDF and upload it again."
    match answer:
        case sandbox.TimedOut(seconds=seconds):
            raise RecognitionFailed(
                f"Copying out the pages that need OCR took longer than {seconds:g} seconds: re-save the PDF and"
                " upload it again."
            )
        case sandbox.OutOfMemory():
            raise RecognitionFailed(_PAGE_COPY_OUT_OF_MEMORY)
        case sandbox.AnswerTooLarge() | sandbox.KilledFromOutside() | sandbox.Crashed():
            raise RecognitionFailed(
                "PDFium failed copying out the pages that need OCR (the PDF may be damaged): re-save it and upload it"
                " again."
            )
        case sandbox.Unreadable(error=error):
            raise RecognitionFailed(unreadable) from error
    header, parts = answer
    if header.get("failed") is not None:
        raise RecognitionFailed(str(header["failed"])[:2000])
    if header.get("outside") is not None:
        raise ValueError(str(header["outside"])[:2000])
    if header.get("every_page") is True:
        return None
    if len(parts) != 1:
        raise RecognitionFailed(unreadable)
    return parts[0]


def _pdf_of_pages_in_child(payload: bytes) -> bytes:
    header, (content,) = sandbox.unpack(payload)
    try:
        subset = _pdf_of_pages(content, header["pages"])
    except RecognitionFailed as failure:
        return sandbox.pack({"failed": failure.detail})
    except ValueError as error:
        return sandbox.pack({"outside": str(error)})
    except MemoryError:
        return sandbox.pack({"failed": _PAGE_COPY_OUT_OF_MEMORY})
    except Exception as error:
        return sandbox.pack(
            {"failed": f"PDFium could not copy out the pages ({type(error).__name__}): re-save the PDF"}
        )
    return sandbox.pack({"every_page": subset is None}, *([subset] if subset is not None else []))


def _pdf_of_pages(content: bytes, pages: Sequence[int]) -> bytes | None:
    """A PDF of just `pages` (1-based) of `content`, or None when they are every page it has."""
    import io

    import pypdfium2 as pdfium

    try:
        original = pdfium.PdfDocument(content)
    except pdfium.PdfiumError as error:
        raise RecognitionFailed(
            f"The PDF cannot be opened to copy out the pages that need OCR ({error}): re-save it and upload it again."
        ) from error
    try:
        count = len(original)
        outside = [page for page in pages if not 1 <= page <= count]
        if outside:
            raise ValueError(f"pages {outside} were asked for, but the PDF has {count} pages")
        if tuple(pages) == tuple(range(1, count + 1)):
            return None
        subset = pdfium.PdfDocument.new()
        try:
            subset.import_pages(original, [page - 1 for page in pages])
            buffer = io.BytesIO()
            subset.save(buffer)
        finally:
            subset.close()
    finally:
        original.close()
    return buffer.getvalue()


def _usage(analysis: bool, response: dict[str, Any]) -> Usage:
    # Named for the priced feature, so the ledger groups sync and async reads of the same kind together.
    return Usage(
        provider=ENGINE,
        operation="textract:AnalyzeDocument" if analysis else "textract:DetectDocumentText",
        priced=True,
        pages=int(response.get("DocumentMetadata", {}).get("Pages", 0)),
    )
