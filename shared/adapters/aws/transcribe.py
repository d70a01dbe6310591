"""The TranscriptionProvider on AWS: Amazon Transcribe batch jobs over the originals where they are stored in S3,
started once per run, polled by the workflow's Wait loop, their output written under the recording's derived
prefix and read back within bounds (shared/adapters/aws/transcribe_output.py). How it names jobs, what it sends,
what it refuses, its IAM and what it cannot pin are in docs/formats.md, "The Amazon Transcribe adapter".
"""

import hashlib
import logging
import random as _random
import re
import time
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from shared.adapters.aws.retrying import Backoff, LazyClient, check_attempts, error_code, error_message, retried
from shared.adapters.aws.transcribe_output import transcript_of
from shared.domain.capabilities import Capability, CapabilityStatus
from shared.domain.errors import CapabilityUnavailable, InfrastructureUnavailable, TranscriptionFailed
from shared.domain.media import (
    AUDIO_FLAC,
    AUDIO_MP4,
    AUDIO_MPEG,
    AUDIO_OGG,
    AUDIO_WAV,
    AUDIO_WEBM,
    VIDEO_MP4,
    VIDEO_QUICKTIME,
    VIDEO_WEBM,
)
from shared.domain.transcription import MAX_TRANSCRIPT_WORDS, MediaSource, Transcript, TranscriptionJob
from shared.domain.uploads import derived_prefix
from shared.domain.usage import Usage
from shared.ports import TranscriptionProvider

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
else:
    S3Client = Any
# boto3-stubs for Transcribe are not a dependency: the client is untyped here.
TranscribeClient = Any

ENGINE = "amazon-transcribe"
USAGE = Usage(provider="transcribe", operation="transcribe:StartTranscriptionJob", priced=True)
# Transcribe's MediaFormat for each accepted type it lists (its batch formats: AMR, FLAC, M4A, MP3, MP4, Ogg, WebM,
# WAV). QuickTime and Matroska are not among them: refused before a job is started.
MEDIA_FORMATS = {
    AUDIO_WAV: "wav",
    AUDIO_MPEG: "mp3",
    AUDIO_MP4: "m4a",
    AUDIO_FLAC: "flac",
    AUDIO_OGG: "ogg",
    AUDIO_WEBM: "webm",
    VIDEO_MP4: "mp4",
    VIDEO_WEBM: "webm",
}
_UNLISTED_NAMES = {VIDEO_QUICKTIME: "a QuickTime (MOV) video", "video/x-matroska": "a Matroska (MKV) video"}
# Job names: Quire's, then the run (TranscriptionJobName: at most 200 of [0-9a-zA-Z._-], unique in the account).
JOB_PREFIX = "quire-"
MAX_JOB_NAME = 200
_JOB_NAME = re.compile(r"[0-9A-Za-z._-]+")
# What Transcribe may write as OutputKey.
_OUTPUT_KEY = re.compile(r"[A-Za-z0-9\-_.!*'()/]{1,1024}")
# Transcribe's own range for MaxSpeakerLabels.
MIN_SPEAKERS, MAX_SPEAKERS = 2, 30
# The most bytes of output read. Measured on outputs of the documented shape (three speakers, audio segments, a full
# stop every 12 words): 285 bytes a word written compactly, 526 indented; 250,000 words parse in 6.5 s to a peak of
# about 790 MB, within the recognize function's 2 GB.
BYTES_PER_WORD = 768
MAX_OUTPUT_BYTES = MAX_TRANSCRIPT_WORDS * BYTES_PER_WORD

BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 10.0
# Worth another call after a pause: Transcribe or S3 is busy, or too many jobs already run in the account.
_RETRYABLE_CODES = frozenset(
    {
        "LimitExceededException",
        "InternalFailureException",
        "ThrottlingException",
        # S3
        "SlowDown",
        "InternalError",
        "ServiceUnavailable",
        "RequestTimeout",
        "500",
        "503",
    }
)
_ACCESS_DENIED_CODES = frozenset({"AccessDeniedException", "AccessDenied", "403"})
_GONE_CODES = frozenset({"NoSuchKey", "NoSuchVersion", "404"})
# Transcribe answers BadRequestException both for a request it will never accept and for storage it may not touch:
# the second is the deployment's to fix, and said so by these words in its message.
_STORAGE_REFUSED = re.compile(r"permission|can't be accessed|cannot be accessed|access denied", re.IGNORECASE)
_JOB_GONE = re.compile(r"couldn't be found|could not be found|does not exist", re.IGNORECASE)
_LOCATIONS = re.compile(r"(?:s3|https?)://\S+")
TRANSCRIBE_NOT_PERMITTED = (
    "Transcription is not permitted for this deployment yet: an operator must grant the recognize function the"
    " access it needs (the refused action is in its log)."
)
GONE = "The stored recording is gone, so there is nothing for Amazon Transcribe to read: upload the file again."
JOB_GONE = "Amazon Transcribe no longer has this transcription job: process the file again."
OUTPUT_MISSING = (
    "Amazon Transcribe finished, but its transcript is not where it was to be written: process the file again."
)

_log = logging.getLogger(__name__)


class AmazonTranscribe(TranscriptionProvider):
    """Transcribe batch jobs over the originals in `bucket`, their output written to the same bucket.

    `transcribe` and `s3` are boto3 clients, or zero-argument factories for them called on first use. `sleep` and
    `random` are injected so the back-off can be tested without waiting; `languages` are the codes Transcribe
    takes as LanguageCode (by default the SDK's own list).
    """

    def __init__(
        self,
        transcribe: "TranscribeClient | Callable[[], TranscribeClient]",
        s3: "S3Client | Callable[[], S3Client]",
        *,
        bucket: str,
        max_speakers: int = 10,
        max_attempts: int = 5,
        languages: Collection[str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        if not MIN_SPEAKERS <= max_speakers <= MAX_SPEAKERS:
            raise ValueError(f"max_speakers must be {MIN_SPEAKERS} to {MAX_SPEAKERS} (Transcribe's range)")
        self._transcribe: LazyClient[TranscribeClient] = LazyClient(transcribe)
        self._s3: LazyClient[S3Client] = LazyClient(s3)
        self._bucket = bucket
        self._max_speakers = max_speakers
        self._max_attempts = check_attempts(max_attempts)
        self._languages = frozenset(languages) if languages is not None else None
        self._sleep = sleep
        self._backoff = Backoff(BACKOFF_BASE_SECONDS, BACKOFF_CAP_SECONDS, random)

    @classmethod
    def from_region(
        cls,
        region: str,
        *,
        bucket: str,
        max_attempts: int = 5,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
        scoped: Callable[[Callable[..., Any]], Callable[[], Any]] = lambda build: build,
    ) -> "AmazonTranscribe":
        """An adapter whose clients are built on first use, with botocore's retries off (this class retries).
        `scoped` turns a client builder (taking credentials) into the factory used: on AWS, one making each call
        with the acting tenant's session, since Transcribe reads the recording and writes its output as its caller."""

        def builder(service: str) -> Callable[..., Any]:
            def build(
                aws_access_key_id: str | None = None,
                aws_secret_access_key: str | None = None,
                aws_session_token: str | None = None,
            ) -> Any:
                import boto3
                from botocore.config import Config

                return boto3.client(
                    service,  # type: ignore[call-overload]  # "transcribe" or "s3", both known to boto3
                    region_name=region,
                    config=Config(
                        retries={"total_max_attempts": 1, "mode": "standard"},
                        connect_timeout=connect_timeout,
                        read_timeout=read_timeout,
                    ),
                    aws_access_key_id=aws_access_key_id,
                    aws_secret_access_key=aws_secret_access_key,
                    aws_session_token=aws_session_token,
                )

            return build

        return cls(scoped(builder("transcribe")), scoped(builder("s3")), bucket=bucket, max_attempts=max_attempts)

    def capability(self) -> CapabilityStatus:
        # No probe call: a missing permission shows up as CapabilityUnavailable on the first recording.
        return CapabilityStatus.ready(provider=ENGINE)

    # --- start ----------------------------------------------------------------------------------------------

    def start(self, source: MediaSource) -> TranscriptionJob:
        media_format = MEDIA_FORMATS.get(source.media_type)
        if media_format is None:
            named = _UNLISTED_NAMES.get(source.media_type, source.media_type)
            raise TranscriptionFailed(
                f"Amazon Transcribe reads WAV, MP3, M4A, FLAC, Ogg, WebM and MP4 recordings, not {named}: save it as"
                " MP4 (or its sound as MP3 or WAV) and upload it again."
            )
        name = job_name(source.run_id)
        output_key = transcript_key(source.storage_key, name)
        parameters: dict[str, Any] = {
            "TranscriptionJobName": name,
            "Media": {"MediaFileUri": f"s3://{self._bucket}/{source.storage_key}"},
            "MediaFormat": media_format,
            "OutputBucketName": self._bucket,
            "OutputKey": output_key,
            **language_settings(source.language, self._language_codes()),
        }
        if source.speaker_labels:
            parameters["Settings"] = {"ShowSpeakerLabels": True, "MaxSpeakerLabels": self._max_speakers}
        self._check_current_version(source)
        try:
            self._call("transcribe:StartTranscriptionJob", self._transcribe.get().start_transcription_job, **parameters)
        except ClientError as error:
            if error_code(error) != "ConflictException":
                raise
            # The name is the run's: a job of that name is this run's, started by an earlier delivery of this step.
            _log.info("transcription job %s was already started: collecting that one", name)
        return TranscriptionJob(engine=ENGINE, job_id=name, output_key=output_key)

    def _language_codes(self) -> frozenset[str]:
        if self._languages is None:
            self._languages = sdk_language_codes(self._transcribe.get())
        return self._languages

    def _check_current_version(self, source: MediaSource) -> None:
        """Transcribe reads the key's current object and takes no version: make sure that is the version checked.
        Another object there is a second post of the same upload form, which upload completion removes; until then
        the step is retried (InfrastructureUnavailable), never started on bytes nobody checked."""
        if source.storage_version_id is None:
            return
        try:
            head = self._call("s3:GetObject", self._s3.get().head_object, Bucket=self._bucket, Key=source.storage_key)
        except ClientError as error:
            if error_code(error) in _GONE_CODES:
                raise TranscriptionFailed(GONE) from error
            raise
        current = head.get("VersionId")
        if current is not None and current != source.storage_version_id:
            raise InfrastructureUnavailable(
                "the recording's key holds another object than the version checked (a second upload under it, which"
                " upload completion removes): transcription waits for it to go"
            )

    # --- collect --------------------------------------------------------------------------------------------

    def collect(self, job: TranscriptionJob) -> Transcript | None:
        if job.output_key is None:
            raise ValueError(f"job {job.job_id} has no output key: it was not started by this adapter")
        response = self._call(
            "transcribe:GetTranscriptionJob",
            self._transcribe.get().get_transcription_job,
            TranscriptionJobName=job.job_id,
        )
        details = response.get("TranscriptionJob") or {}
        status = details.get("TranscriptionJobStatus")
        if status in ("QUEUED", "IN_PROGRESS"):
            return None
        if status == "FAILED":
            raise TranscriptionFailed(failure_sentence(details.get("FailureReason")))
        if status != "COMPLETED":
            raise ValueError(f"transcription job {job.job_id} is {status!r}, a status Transcribe does not document")
        language = details.get("LanguageCode")
        return transcript_of(
            self._output(job.output_key),
            engine=ENGINE,
            language=language if isinstance(language, str) and language else None,
            usage=USAGE,
        )

    def _output(self, key: str) -> bytes:
        """The job's output, refused past MAX_OUTPUT_BYTES (by its length, and by what is read)."""
        try:
            response = self._call("s3:GetObject", self._s3.get().get_object, Bucket=self._bucket, Key=key)
        except ClientError as error:
            if error_code(error) in _GONE_CODES:
                raise TranscriptionFailed(OUTPUT_MISSING) from error
            raise
        body = response["Body"]
        try:
            if int(response.get("ContentLength") or 0) > MAX_OUTPUT_BYTES:
                raise TranscriptionFailed(_too_long())
            raw: bytes = body.read(MAX_OUTPUT_BYTES + 1)
        finally:
            body.close()
        if len(raw) > MAX_OUTPUT_BYTES:
            raise TranscriptionFailed(_too_long())
        return raw

    # --- discard --------------------------------------------------------------------------------------------

    def discard(self, job: TranscriptionJob) -> None:
        """Remove every version of the job's output, then the job itself (its record at Transcribe names the
        recording's key). Never raises: what is left is removed with the file's derived objects."""
        if job.output_key is not None:
            try:
                self._delete_every_version(job.output_key)
            except Exception:
                _log.exception("could not remove the output of transcription job %s", job.job_id)
        try:
            self._call(
                "transcribe:DeleteTranscriptionJob",
                self._transcribe.get().delete_transcription_job,
                TranscriptionJobName=job.job_id,
            )
        except Exception:
            # Transcribe forgets a job's record after 90 days anyway.
            _log.warning("could not delete transcription job %s", job.job_id, exc_info=True)

    def _delete_every_version(self, key: str) -> None:
        s3 = self._s3.get()
        markers: dict[str, str] = {}
        while True:
            listing = self._call(
                "s3:ListBucketVersions", s3.list_object_versions, Bucket=self._bucket, Prefix=key, **markers
            )
            for entry in (*listing.get("Versions", []), *listing.get("DeleteMarkers", [])):
                if entry["Key"] != key:  # the prefix also matches longer keys
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

    # --- plumbing -------------------------------------------------------------------------------------------

    def _call(self, action: str, operation: Callable[..., Any], **parameters: Any) -> Any:
        """One AWS call, retried while the service is busy; refusals classified."""

        def refuse(error: ClientError) -> None:
            code, message = error_code(error), error_message(error)
            if code in _ACCESS_DENIED_CODES or (code == "BadRequestException" and _STORAGE_REFUSED.search(message)):
                # The action to grant is the operator's to read, in the log: never the file owner's.
                _log.error(
                    "AWS refused %s (%s: %s): grant %s to the recognize function's tenant data role",
                    action,
                    code,
                    message,
                    action,
                )
                raise CapabilityUnavailable(Capability.TRANSCRIPTION.value, TRANSCRIBE_NOT_PERMITTED) from error
            gone = code == "NotFoundException" or (code == "BadRequestException" and _JOB_GONE.search(message))
            if gone and action == "transcribe:GetTranscriptionJob":
                raise TranscriptionFailed(JOB_GONE) from error
            if code == "BadRequestException" and action == "transcribe:StartTranscriptionJob":
                _log.info("transcribe refused the job: %s", message)
                raise TranscriptionFailed(
                    _sentence("Amazon Transcribe refused to transcribe the recording", message)
                ) from error

        return retried(
            lambda: operation(**parameters),
            max_attempts=self._max_attempts,
            retryable_codes=_RETRYABLE_CODES,
            backoff=self._backoff,
            sleep=self._sleep,
            refuse=refuse,
        )


def job_name(run_id: str) -> str:
    """The job's TranscriptionJobName: `quire-` and the run's id, or its SHA-256 where the id has characters or a
    length Transcribe does not take. The same run always names the same job, so a start delivered again is a
    ConflictException, not a second job."""
    if not run_id:
        raise ValueError("a transcription needs its run's id (MediaSource.run_id) to be started once")
    if _JOB_NAME.fullmatch(run_id) and len(JOB_PREFIX) + len(run_id) <= MAX_JOB_NAME:
        return f"{JOB_PREFIX}{run_id}"
    return f"{JOB_PREFIX}{hashlib.sha256(run_id.encode('utf-8')).hexdigest()}"


def transcript_key(storage_key: str, name: str) -> str:
    """Where the job writes its output: under the recording's derived prefix (so deleting the file removes it,
    and the tenant's session may write it), named after the job."""
    key = f"{derived_prefix(storage_key)}transcribe-{name}.json"
    if not _OUTPUT_KEY.fullmatch(key):
        raise ValueError(f"{key!r} is not a key Transcribe may write its output to")
    return key


def language_settings(language: str | None, codes: Collection[str]) -> dict[str, Any]:
    """How Transcribe is told the language: identified (IdentifyLanguage) when none is fixed; the code when Transcribe
    has it (`en-us` is `en-US`); for a bare language with several variants (`en`), identified among those variants.

    Raises TranscriptionFailed for a language Transcribe does not transcribe at all."""
    if not language or not language.strip():
        return {"IdentifyLanguage": True}
    primary, _, region = language.strip().replace("_", "-").partition("-")
    wanted = f"{primary.lower()}-{region.upper()}" if region else primary.lower()
    if wanted in codes:
        return {"LanguageCode": wanted}
    variants = sorted(code for code in codes if code.partition("-")[0].lower() == primary.lower())
    if len(variants) == 1:
        return {"LanguageCode": variants[0]}
    if variants:
        # Transcribe takes at least two options; it picks the variant it hears.
        return {"IdentifyLanguage": True, "LanguageOptions": variants}
    raise TranscriptionFailed(
        f"Amazon Transcribe does not transcribe the collection's language ({language[:35]}): set the collection's"
        " language to one it does, or to none so that the language is identified, and process the file again."
    )


def sdk_language_codes(client: TranscribeClient) -> frozenset[str]:
    """The LanguageCode values the client's model of Transcribe (the installed SDK's) lists."""
    from botocore.model import StringShape

    shape = client.meta.service_model.shape_for("LanguageCode")
    assert isinstance(shape, StringShape)
    return frozenset(shape.enum)


def failure_sentence(reason: object) -> str:
    """A failed job's FailureReason as one sentence its owner reads (storage locations taken out)."""
    if not isinstance(reason, str) or not reason.strip():
        return (
            "Amazon Transcribe failed on the recording without saying why: save it again (for example as MP3 or WAV)"
            " and upload it again."
        )
    return _sentence("Amazon Transcribe could not transcribe the recording", reason)


def _sentence(opening: str, message: str) -> str:
    detail = " ".join(_LOCATIONS.sub("the stored recording", message).split())[:400].rstrip(" .")
    return f"{opening}: {detail[:1].lower()}{detail[1:]}." if detail else f"{opening}."


def _too_long() -> str:
    return (
        f"Amazon Transcribe's transcript is longer than Quire reads ({MAX_OUTPUT_BYTES // (1024 * 1024)} MiB, about"
        f" {MAX_TRANSCRIPT_WORDS:,} words): split the recording into shorter ones and upload them."
    )
