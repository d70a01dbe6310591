"""AmazonTranscribe against real transcribe and s3 clients whose calls botocore's Stubber answers.

The responses are shaped as the Transcribe API reference documents them (StartTranscriptionJob and
GetTranscriptionJob: TranscriptionJob with TranscriptionJobStatus, LanguageCode, FailureReason, Transcript), and the
job's output as the developer guide's "Example diarization output (batch)" shows it, with the `id`s and
`audio_segments` newer outputs carry: every number a string, punctuation items untimed.
"""

import io
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from shared.adapters.aws import transcribe_output
from shared.adapters.aws.retrying import error_code
from shared.adapters.aws.transcribe import (
    BYTES_PER_WORD,
    MAX_OUTPUT_BYTES,
    TRANSCRIBE_NOT_PERMITTED,
    AmazonTranscribe,
    job_name,
    language_settings,
    sdk_language_codes,
    transcript_key,
)
from shared.adapters.transient import is_transient
from shared.domain.errors import CapabilityUnavailable, InfrastructureUnavailable, TranscriptionFailed
from shared.domain.transcription import MAX_TRANSCRIPT_WORDS, MediaSource, Transcript, TranscriptionJob
from shared.domain.uploads import derived_prefix
from shared.ports import TranscriptionProvider
from tests.builders.aws import Delays, offline_client

BUCKET = "quire-originals"
KEY = "tenants/acme/files/6f1c2f9e-6a4b-4c0e-9b44-2f8f3c1e0a11/versions/0b8e1c52-7d3f-4f5e-8f0a-1a2b3c4d5e6f"
VERSION = "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"
RUN = "0b8e1c52-7d3f-4f5e-8f0a-1a2b3c4d5e6f-1"
NAME = f"quire-{RUN}"
OUTPUT = f"derived/{KEY}/transcribe-{NAME}.json"
LANGUAGES = frozenset({"en-US", "en-GB", "en-AU", "de-DE", "de-CH", "fr-FR", "ja-JP", "cy-GB"})


class Aws:
    """A transcribe and an s3 client, each with an active Stubber, and the adapter over them."""

    def __init__(self, *, max_attempts: int = 5, languages: frozenset[str] | None = LANGUAGES) -> None:
        self.transcribe = offline_client("transcribe")
        self.s3 = offline_client("s3")
        self.transcribe_stub = Stubber(self.transcribe)
        self.s3_stub = Stubber(self.s3)
        self.delays = Delays()
        self.adapter = AmazonTranscribe(
            self.transcribe,
            self.s3,
            bucket=BUCKET,
            languages=languages,
            max_attempts=max_attempts,
            sleep=self.delays,
            random=lambda: 1.0,
        )

    def __enter__(self) -> "Aws":
        self.transcribe_stub.activate()
        self.s3_stub.activate()
        return self

    def __exit__(self, *exc: object) -> None:
        self.transcribe_stub.deactivate()
        self.s3_stub.deactivate()

    def assert_all_called(self) -> None:
        self.transcribe_stub.assert_no_pending_responses()
        self.s3_stub.assert_no_pending_responses()

    def current_version(self, version: str = VERSION) -> None:
        self.s3_stub.add_response(
            "head_object", {"ContentLength": 4_000_000, "VersionId": version}, {"Bucket": BUCKET, "Key": KEY}
        )

    def job_is(self, status: str, **fields: Any) -> None:
        self.transcribe_stub.add_response(
            "get_transcription_job",
            {"TranscriptionJob": {"TranscriptionJobName": NAME, "TranscriptionJobStatus": status, **fields}},
            {"TranscriptionJobName": NAME},
        )

    def output_is(self, raw: bytes, *, length: int | None = None) -> None:
        body = StreamingBody(io.BytesIO(raw), len(raw))
        self.s3_stub.add_response(
            "get_object",
            {"Body": body, "ContentLength": len(raw) if length is None else length},
            {"Bucket": BUCKET, "Key": OUTPUT},
        )


@pytest.fixture
def aws() -> Iterator[Aws]:
    with Aws() as stubbed:
        yield stubbed


def source(media_type: str = "audio/mpeg", *, language: str | None = None, speaker_labels: bool = False) -> MediaSource:
    def fetch(path: object) -> None:
        raise AssertionError("Transcribe reads storage itself: the recording is never fetched")

    return MediaSource(
        media_type=media_type,
        storage_key=KEY,
        storage_version_id=VERSION,
        fetch=fetch,
        duration_seconds=9.5,
        language=language,
        speaker_labels=speaker_labels,
        run_id=RUN,
    )


def start_call(**extra: Any) -> dict[str, Any]:
    return {
        "TranscriptionJobName": NAME,
        "Media": {"MediaFileUri": f"s3://{BUCKET}/{KEY}"},
        "MediaFormat": "mp3",
        "OutputBucketName": BUCKET,
        "OutputKey": OUTPUT,
        **extra,
    }


def started(status: str = "IN_PROGRESS") -> dict[str, Any]:
    return {"TranscriptionJob": {"TranscriptionJobName": NAME, "TranscriptionJobStatus": status}}


def job() -> TranscriptionJob:
    return TranscriptionJob(engine="amazon-transcribe", job_id=NAME, output_key=OUTPUT)


def word(
    item_id: int, content: str, start: float, end: float, *, confidence: str = "0.998", speaker: str | None = None
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": item_id,
        "type": "pronunciation",
        "alternatives": [{"confidence": confidence, "content": content}],
        "start_time": f"{start:.2f}",
        "end_time": f"{end:.2f}",
    }
    if speaker is not None:
        item["speaker_label"] = speaker
    return item


def mark(item_id: int, content: str, *, speaker: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": item_id,
        "type": "punctuation",
        "alternatives": [{"confidence": "0.0", "content": content}],
    }
    if speaker is not None:
        item["speaker_label"] = speaker
    return item


def documented_output() -> dict[str, Any]:
    """The developer guide's diarization example ("I've been on hold for an hour. Sorry about that."), as a newer
    job writes it: items with ids and speaker labels, speaker turns, audio segments; two words less sure."""
    items = [
        word(0, "I've", 4.87, 5.02, speaker="spk_0"),
        word(1, "been", 5.02, 5.17, speaker="spk_0"),
        word(2, "on", 5.17, 5.29, speaker="spk_0"),
        word(3, "hold", 5.29, 5.64, confidence="0.61", speaker="spk_0"),
        word(4, "for", 5.64, 5.84, speaker="spk_0"),
        word(5, "an", 6.11, 6.26, speaker="spk_0"),
        word(6, "hour", 6.26, 6.88, speaker="spk_0"),
        mark(7, ".", speaker="spk_0"),
        word(8, "Sorry", 8.49, 8.88, confidence="0.9", speaker="spk_1"),
        word(9, "about", 8.88, 9.05, speaker="spk_1"),
        word(10, "that", 9.05, 9.24, confidence="0.42", speaker="spk_1"),
        mark(11, ".", speaker="spk_1"),
    ]
    turns = [
        {"start_time": "4.87", "end_time": "6.88", "speaker_label": "spk_0", "items": []},
        {"start_time": "8.49", "end_time": "9.24", "speaker_label": "spk_1", "items": []},
    ]
    return {
        "jobName": NAME,
        "accountId": "111122223333",
        "status": "COMPLETED",
        "results": {
            "transcripts": [{"transcript": "I've been on hold for an hour. Sorry about that."}],
            "speaker_labels": {"channel_label": "ch_0", "speakers": 2, "segments": turns},
            "items": items,
            "audio_segments": [
                {
                    "id": 0,
                    "transcript": "I've been on hold for an hour.",
                    "start_time": "4.87",
                    "end_time": "6.88",
                    "speaker_label": "spk_0",
                    "items": [0, 1, 2, 3, 4, 5, 6, 7],
                },
                {
                    "id": 1,
                    "transcript": "Sorry about that.",
                    "start_time": "8.49",
                    "end_time": "9.24",
                    "speaker_label": "spk_1",
                    "items": [8, 9, 10, 11],
                },
            ],
        },
    }


def encoded(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode("utf-8")


def collected(aws: Aws, document: dict[str, Any], **job_fields: Any) -> Transcript:
    aws.job_is("COMPLETED", **job_fields)
    aws.output_is(encoded(document))
    transcript = aws.adapter.collect(job())
    assert transcript is not None
    aws.assert_all_called()
    return transcript


# Starting a job.


def test_a_recording_starts_one_job_named_for_its_run_with_the_language_identified(aws: Aws) -> None:
    aws.current_version()
    aws.transcribe_stub.add_response("start_transcription_job", started(), start_call(IdentifyLanguage=True))
    started_job = aws.adapter.start(source())
    aws.assert_all_called()
    assert started_job == TranscriptionJob(engine="amazon-transcribe", job_id=NAME, output_key=OUTPUT)


def test_a_start_delivered_again_is_the_same_job_not_a_second_one(aws: Aws) -> None:
    aws.current_version()
    aws.transcribe_stub.add_response("start_transcription_job", started(), start_call(IdentifyLanguage=True))
    first = aws.adapter.start(source())
    # Delivered again (the step retried after its answer was lost): Transcribe refuses the name it already has.
    aws.current_version()
    aws.transcribe_stub.add_client_error(
        "start_transcription_job",
        service_error_code="ConflictException",
        service_message="The requested job name already exists. Use a different job name.",
        http_status_code=400,
        expected_params=start_call(IdentifyLanguage=True),
    )
    again = aws.adapter.start(source())
    aws.assert_all_called()
    assert again == first and aws.delays.asked == []


def test_a_language_the_collection_fixes_is_sent_as_transcribes_code(aws: Aws) -> None:
    aws.current_version()
    aws.transcribe_stub.add_response("start_transcription_job", started(), start_call(LanguageCode="en-GB"))
    aws.adapter.start(source(language="en_gb"))
    aws.assert_all_called()


@pytest.mark.parametrize(
    ("language", "settings"),
    [
        (None, {"IdentifyLanguage": True}),
        ("", {"IdentifyLanguage": True}),
        ("en-US", {"LanguageCode": "en-US"}),
        ("fr", {"LanguageCode": "fr-FR"}),  # one variant: that one
        ("cy", {"LanguageCode": "cy-GB"}),
        # Several variants: identified among them only (Transcribe takes two or more options).
        ("de", {"IdentifyLanguage": True, "LanguageOptions": ["de-CH", "de-DE"]}),
        ("en-NZ", {"IdentifyLanguage": True, "LanguageOptions": ["en-AU", "en-GB", "en-US"]}),
    ],
)
def test_the_language_is_fixed_or_identified_as_transcribe_can(language: str | None, settings: dict[str, Any]) -> None:
    assert language_settings(language, LANGUAGES) == settings


def test_a_language_transcribe_does_not_know_is_refused_naming_it_and_the_fix() -> None:
    with pytest.raises(TranscriptionFailed) as raised:
        language_settings("la", LANGUAGES)
    assert "(la)" in raised.value.detail and "to none so that the language is identified" in raised.value.detail


def test_the_sdks_list_of_languages_is_transcribes() -> None:
    codes = sdk_language_codes(offline_client("transcribe"))
    assert {"en-US", "de-DE", "ja-JP"} <= codes and all(re.fullmatch(r"[a-z]{2,3}-[A-Z]{2}", code) for code in codes)


def test_by_default_the_languages_are_the_sdks() -> None:
    with Aws(languages=None) as aws:
        aws.current_version()
        aws.transcribe_stub.add_response("start_transcription_job", started(), start_call(LanguageCode="ja-JP"))
        aws.adapter.start(source(language="ja"))
        aws.assert_all_called()


def test_speakers_are_labelled_when_the_source_asks(aws: Aws) -> None:
    aws.current_version()
    settings = {"ShowSpeakerLabels": True, "MaxSpeakerLabels": 10}
    aws.transcribe_stub.add_response(
        "start_transcription_job", started(), start_call(LanguageCode="de-DE", Settings=settings)
    )
    aws.adapter.start(source(language="de-DE", speaker_labels=True))
    aws.assert_all_called()


@pytest.mark.parametrize(
    ("media_type", "media_format"),
    [
        ("audio/wav", "wav"),
        ("audio/mp4", "m4a"),
        ("audio/flac", "flac"),
        ("audio/ogg", "ogg"),
        ("audio/webm", "webm"),
        ("video/mp4", "mp4"),
        ("video/webm", "webm"),
    ],
)
def test_each_format_transcribe_lists_is_named_to_it(aws: Aws, media_type: str, media_format: str) -> None:
    aws.current_version()
    expected = {**start_call(IdentifyLanguage=True), "MediaFormat": media_format}
    aws.transcribe_stub.add_response("start_transcription_job", started(), expected)
    aws.adapter.start(source(media_type))
    aws.assert_all_called()


@pytest.mark.parametrize(("media_type", "named"), [("video/quicktime", "MOV"), ("video/x-matroska", "MKV")])
def test_a_container_transcribe_does_not_list_is_refused_before_any_call(aws: Aws, media_type: str, named: str) -> None:
    with pytest.raises(TranscriptionFailed) as raised:
        aws.adapter.start(source(media_type))
    assert named in raised.value.detail
    assert "WAV, MP3, M4A, FLAC, Ogg, WebM and MP4" in raised.value.detail
    aws.assert_all_called()


def test_another_object_under_the_key_waits_rather_than_transcribing_unchecked_bytes(aws: Aws) -> None:
    """Transcribe takes no version: it would read whatever the key holds now."""
    aws.current_version("a-second-post-of-the-form")
    with pytest.raises(InfrastructureUnavailable, match="another object"):
        aws.adapter.start(source())
    aws.assert_all_called()  # no job started


def test_a_recording_gone_from_storage_is_the_recordings_problem(aws: Aws) -> None:
    aws.s3_stub.add_client_error("head_object", service_error_code="404", http_status_code=404)
    with pytest.raises(TranscriptionFailed, match="gone"):
        aws.adapter.start(source())


def test_a_missing_transcribe_permission_makes_transcription_unavailable_and_only_the_log_names_it(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    aws.current_version()
    aws.transcribe_stub.add_client_error(
        "start_transcription_job", service_error_code="AccessDeniedException", http_status_code=400
    )
    with (
        caplog.at_level("ERROR", logger="shared.adapters.aws.transcribe"),
        pytest.raises(CapabilityUnavailable) as raised,
    ):
        aws.adapter.start(source())
    assert raised.value.capability == "transcription" and raised.value.reason == TRANSCRIBE_NOT_PERMITTED
    assert "grant transcribe:StartTranscriptionJob to the recognize function's tenant data role" in caplog.text
    assert aws.delays.asked == []


def test_storage_transcribe_may_not_read_is_the_deployments_problem_not_the_recordings(aws: Aws) -> None:
    aws.current_version()
    aws.transcribe_stub.add_client_error(
        "start_transcription_job",
        service_error_code="BadRequestException",
        service_message="The S3 URI that you provided can't be accessed. Make sure that you have read permission and"
        " try your request again.",
        http_status_code=400,
    )
    with pytest.raises(CapabilityUnavailable):
        aws.adapter.start(source())


def test_a_request_transcribe_refuses_is_the_recordings_failure_naming_no_storage_location(aws: Aws) -> None:
    aws.current_version()
    aws.transcribe_stub.add_client_error(
        "start_transcription_job",
        service_error_code="BadRequestException",
        service_message=f"The media file s3://{BUCKET}/{KEY} is longer than 4 hours.",
        http_status_code=400,
    )
    with pytest.raises(TranscriptionFailed) as raised:
        aws.adapter.start(source())
    assert raised.value.detail == (
        "Amazon Transcribe refused to transcribe the recording: the media file the stored recording is longer than"
        " 4 hours."
    )
    assert KEY not in raised.value.detail and aws.delays.asked == []


def test_a_busy_transcribe_is_asked_again_after_growing_pauses() -> None:
    with Aws() as aws:
        aws.current_version()
        for _ in range(2):
            aws.transcribe_stub.add_client_error(
                "start_transcription_job", service_error_code="LimitExceededException", http_status_code=400
            )
        aws.transcribe_stub.add_response("start_transcription_job", started(), start_call(IdentifyLanguage=True))
        aws.adapter.start(source())
        aws.assert_all_called()
        assert aws.delays.asked == [0.5, 1.0]


def test_a_busy_transcribe_past_the_attempts_is_the_infrastructures_error_for_the_workflow() -> None:
    with Aws(max_attempts=2) as aws:
        aws.current_version()
        for _ in range(2):
            aws.transcribe_stub.add_client_error(
                "start_transcription_job", service_error_code="InternalFailureException", http_status_code=500
            )
        with pytest.raises(ClientError) as raised:
            aws.adapter.start(source())
        # What the step's handler turns into InfrastructureUnavailable, which the state machine retries.
        assert error_code(raised.value) == "InternalFailureException" and is_transient(raised.value)
        assert aws.delays.asked == [0.5]


# The names it gives.


def test_job_names_are_the_runs_within_transcribes_alphabet_and_length() -> None:
    assert job_name(RUN) == NAME
    assert job_name(RUN) == job_name(RUN)
    odd = job_name("tenant/with spaces" + "x" * 300)
    assert re.fullmatch(r"quire-[0-9a-f]{64}", odd)
    for name in (NAME, odd):
        assert re.fullmatch(r"[0-9a-zA-Z._-]{1,200}", name)
    with pytest.raises(ValueError, match="run"):
        job_name("")


def test_the_output_is_written_under_the_recordings_derived_prefix_as_a_key_transcribe_takes() -> None:
    key = transcript_key(KEY, NAME)
    assert key == OUTPUT and key.startswith(derived_prefix(KEY)) and key.startswith("derived/tenants/acme/")
    assert re.fullmatch(r"[a-zA-Z0-9\-_.!*'()/]{1,1024}", key)
    with pytest.raises(ValueError, match="not a key Transcribe may write"):
        transcript_key("tenants/acme/files/a b", NAME)


# Collecting it.


@pytest.mark.parametrize("status", ["QUEUED", "IN_PROGRESS"])
def test_a_job_still_queued_or_running_collects_nothing(aws: Aws, status: str) -> None:
    aws.job_is(status)
    assert aws.adapter.collect(job()) is None
    aws.assert_all_called()


def test_a_failed_job_is_the_recordings_failure_in_one_sentence_without_storage_locations(aws: Aws) -> None:
    aws.job_is(
        "FAILED",
        FailureReason=f"The media format provided does not match the detected media format for s3://{BUCKET}/{KEY}",
    )
    with pytest.raises(TranscriptionFailed) as raised:
        aws.adapter.collect(job())
    assert raised.value.detail == (
        "Amazon Transcribe could not transcribe the recording: the media format provided does not match the detected"
        " media format for the stored recording."
    )


def test_a_failed_job_that_says_nothing_still_fails_with_a_fix(aws: Aws) -> None:
    aws.job_is("FAILED")
    with pytest.raises(TranscriptionFailed, match="without saying why"):
        aws.adapter.collect(job())


def test_a_job_transcribe_no_longer_has_fails_saying_to_process_again(aws: Aws) -> None:
    aws.transcribe_stub.add_client_error(
        "get_transcription_job",
        service_error_code="BadRequestException",
        service_message="The requested job couldn't be found. Check the job name and try your request again.",
        http_status_code=400,
    )
    with pytest.raises(TranscriptionFailed, match="process the file again"):
        aws.adapter.collect(job())


def test_a_finished_job_is_its_audio_segments_with_speakers_words_and_confidences(aws: Aws) -> None:
    transcript = collected(aws, documented_output(), LanguageCode="en-US", IdentifyLanguage=True)
    assert transcript.engine == "amazon-transcribe" and transcript.language == "en-US"
    assert transcript.duration_seconds == pytest.approx(9.24)
    first, second = transcript.segments
    assert (first.text, first.speaker, first.start_seconds, first.end_seconds) == (
        "I've been on hold for an hour.",
        "Speaker 1",
        4.87,
        6.88,
    )
    assert (second.text, second.speaker) == ("Sorry about that.", "Speaker 2")
    # Punctuation belongs to the word before it; a word keeps its own time and confidence (0..1).
    assert [w.text for w in first.words] == ["I've", "been", "on", "hold", "for", "an", "hour."]
    hold = first.words[3]
    assert (hold.start_seconds, hold.end_seconds, hold.confidence, hold.low_confidence) == (5.29, 5.64, 0.61, True)
    assert second.words[-1].text == "that." and second.words[-1].confidence == pytest.approx(0.42)
    # A segment's confidence is its words', weighted by length.
    lengths = [5, 5, 5]
    expected = (0.9 * lengths[0] + 0.998 * lengths[1] + 0.42 * lengths[2]) / sum(lengths)
    assert second.confidence == pytest.approx(expected)
    assert transcript.usage.provider == "transcribe" and transcript.usage.priced
    assert transcript.usage.operation == "transcribe:StartTranscriptionJob"
    assert transcript.word_count == 10


def test_an_identified_language_the_job_does_not_name_comes_from_the_output(aws: Aws) -> None:
    document = documented_output()
    document["results"]["language_code"] = "en-GB"
    assert collected(aws, document).language == "en-GB"


def test_without_audio_segments_speech_is_cut_at_pauses_sentence_ends_and_speaker_turns(aws: Aws) -> None:
    """An older output: no ids on items, speakers only in speaker_labels.segments."""
    items = [
        word(0, "Welcome", 0.10, 0.50),
        word(0, "back", 0.50, 0.80),
        # 1.2 s of silence: a new segment, though no sentence ended.
        word(0, "today", 2.00, 2.40),
        word(0, "we", 2.40, 2.55),
        word(0, "start", 2.55, 2.90),
        mark(0, "."),
        # A sentence ended: a new segment, though no pause.
        word(0, "First", 2.95, 3.30),
        word(0, "item", 3.30, 3.70),
        # Another speaker, straight after: a new segment.
        word(0, "Agreed", 3.75, 4.20),
        mark(0, "!"),
    ]
    for item in items:
        del item["id"]
    turns = [
        {"start_time": "0.10", "end_time": "3.70", "speaker_label": "spk_0"},
        {"start_time": "3.75", "end_time": "4.20", "speaker_label": "spk_1"},
    ]
    document = {"results": {"items": items, "speaker_labels": {"speakers": 2, "segments": turns}}}
    transcript = collected(aws, document, LanguageCode="en-US")
    assert [(s.text, s.speaker) for s in transcript.segments] == [
        ("Welcome back", "Speaker 1"),
        ("today we start.", "Speaker 1"),
        ("First item", "Speaker 1"),
        ("Agreed!", "Speaker 2"),
    ]
    assert [(s.start_seconds, s.end_seconds) for s in transcript.segments] == [
        (0.1, 0.8),
        (2.0, 2.9),
        (2.95, 3.7),
        (3.75, 4.2),
    ]


def test_a_monologue_without_pauses_is_cut_before_thirty_seconds(aws: Aws) -> None:
    items = [word(index, f"w{index}", index * 0.5, index * 0.5 + 0.45) for index in range(130)]
    transcript = collected(aws, {"results": {"items": items}})
    assert len(transcript.segments) == 3
    assert all(s.end_seconds - s.start_seconds <= 30 for s in transcript.segments)
    assert sum(len(s.words) for s in transcript.segments) == 130


def test_an_audio_segment_two_speakers_share_is_split_where_the_speaker_changes(aws: Aws) -> None:
    document = documented_output()
    results = document["results"]
    results["audio_segments"] = [
        {
            "id": 0,
            "transcript": "I've been on hold for an hour. Sorry about that.",
            "start_time": "4.87",
            "end_time": "9.24",
            "items": list(range(12)),
        }
    ]
    transcript = collected(aws, document)
    assert [(s.text, s.speaker) for s in transcript.segments] == [
        ("I've been on hold for an hour.", "Speaker 1"),
        ("Sorry about that.", "Speaker 2"),
    ]


def test_audio_segments_that_leave_words_out_are_not_trusted_and_nothing_heard_is_lost(aws: Aws) -> None:
    document = documented_output()
    document["results"]["audio_segments"] = document["results"]["audio_segments"][:1]
    transcript = collected(aws, document)
    assert "Sorry about that." in transcript.text and transcript.word_count == 10


def test_an_output_that_heard_nothing_is_an_empty_transcript(aws: Aws) -> None:
    document = {"results": {"transcripts": [{"transcript": ""}], "items": [], "audio_segments": []}}
    transcript = collected(aws, document, LanguageCode="en-US")
    assert transcript.segments == () and transcript.duration_seconds == 0


# Its bounds.


def test_an_output_longer_than_the_bound_is_refused_without_being_read(aws: Aws) -> None:
    assert MAX_OUTPUT_BYTES == MAX_TRANSCRIPT_WORDS * BYTES_PER_WORD
    aws.job_is("COMPLETED")
    aws.output_is(b"{}", length=MAX_OUTPUT_BYTES + 1)
    with pytest.raises(TranscriptionFailed, match=r"longer than Quire reads \(183 MiB, about 250,000 words\)"):
        aws.adapter.collect(job())


def test_an_output_whose_length_understates_it_is_still_read_only_to_the_bound(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shared.adapters.aws import transcribe

    monkeypatch.setattr(transcribe, "MAX_OUTPUT_BYTES", 1024)
    aws.job_is("COMPLETED")
    aws.output_is(encoded(documented_output()), length=10)
    with pytest.raises(TranscriptionFailed, match="longer than Quire reads"):
        aws.adapter.collect(job())


def test_more_words_than_a_transcript_may_hold_are_refused(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcribe_output, "MAX_TRANSCRIPT_WORDS", 9)
    aws.job_is("COMPLETED")
    aws.output_is(encoded(documented_output()))
    with pytest.raises(TranscriptionFailed, match="more than 9 words"):
        aws.adapter.collect(job())


def test_an_output_that_is_not_transcribes_json_is_the_recordings_failure(aws: Aws) -> None:
    aws.job_is("COMPLETED")
    aws.output_is(b"<html>not json</html>")
    with pytest.raises(TranscriptionFailed, match="could not be read"):
        aws.adapter.collect(job())


def test_a_word_and_its_text_are_bounded_and_odd_numbers_are_skipped(aws: Aws) -> None:
    items = [
        word(0, "x" * 500, 0.0, 0.4),
        {
            "id": 1,
            "type": "pronunciation",
            "alternatives": [{"confidence": "NaN", "content": "odd"}],
            "start_time": "-1",
            "end_time": "0.9",
        },
        word(2, "fine", 0.5, 0.9, confidence="7"),
    ]
    transcript = collected(aws, {"results": {"items": items}})
    words = [w for s in transcript.segments for w in s.words]
    assert [len(w.text) for w in words] == [200, 4] and words[1].confidence == 1.0


def test_a_finished_jobs_output_that_is_missing_fails_saying_to_process_again(aws: Aws) -> None:
    aws.job_is("COMPLETED")
    aws.s3_stub.add_client_error("get_object", service_error_code="NoSuchKey", http_status_code=404)
    with pytest.raises(TranscriptionFailed, match="not where it was to be written"):
        aws.adapter.collect(job())


# Discarding it.


def test_discard_removes_every_version_of_the_output_and_the_job(aws: Aws) -> None:
    aws.s3_stub.add_response(
        "list_object_versions",
        {
            "Versions": [
                {"Key": OUTPUT, "VersionId": "v2"},
                {"Key": OUTPUT + ".longer", "VersionId": "other"},  # another key the prefix matches: kept
            ],
            "DeleteMarkers": [{"Key": OUTPUT, "VersionId": "m1"}],
            "IsTruncated": False,
        },
        {"Bucket": BUCKET, "Prefix": OUTPUT},
    )
    for version in ("v2", "m1"):
        aws.s3_stub.add_response("delete_object", {}, {"Bucket": BUCKET, "Key": OUTPUT, "VersionId": version})
    aws.transcribe_stub.add_response("delete_transcription_job", {}, {"TranscriptionJobName": NAME})
    aws.adapter.discard(job())
    aws.assert_all_called()


def test_discard_never_raises_when_storage_or_transcribe_refuse(aws: Aws, caplog: pytest.LogCaptureFixture) -> None:
    aws.s3_stub.add_client_error("list_object_versions", service_error_code="AccessDenied", http_status_code=403)
    aws.transcribe_stub.add_client_error(
        "delete_transcription_job", service_error_code="BadRequestException", http_status_code=400
    )
    aws.adapter.discard(job())
    aws.assert_all_called()
    assert f"could not remove the output of transcription job {NAME}" in caplog.text


# Construction.


def test_the_capability_is_ready_and_the_adapter_keeps_the_port() -> None:
    provider: TranscriptionProvider = AmazonTranscribe(
        offline_client("transcribe"), offline_client("s3"), bucket=BUCKET
    )
    status = provider.capability()
    assert status.available and status.provider == "amazon-transcribe"


def test_speakers_are_asked_for_within_transcribes_range() -> None:
    with pytest.raises(ValueError, match="2 to 30"):
        AmazonTranscribe(offline_client("transcribe"), offline_client("s3"), bucket=BUCKET, max_speakers=31)


def test_on_aws_the_speech_engine_is_transcribe_ready_without_a_call() -> None:
    from shared.bootstrap import Container
    from shared.config import Settings

    status = Container(Settings(runtime="aws")).transcription.capability()
    assert status.available and status.provider == "amazon-transcribe"
