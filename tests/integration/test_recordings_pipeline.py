"""Recordings through the local stack's pipeline (issue 35): uploaded, sniffed, probed in the sandbox by ranged
reads, transcribed, chunked and cited to the second; refused with their sentence when the container says so, and
failed saying why when no speech engine is here.

The speech engine is `FakeSpeechEngine`, a fake of the TranscriptionProvider port that answers a script (the real
local engine is tested on generated speech in its own tests): what is under test is everything around it."""

import hashlib
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from shared.bootstrap import Container, overridden
from shared.bootstrap.adapters import adapters_for
from shared.domain.capabilities import Capability, CapabilityStatus
from shared.domain.transcription import (
    RANGE_DASH,
    MediaSource,
    TranscribedWord,
    Transcript,
    TranscriptionJob,
    TranscriptSegment,
)
from shared.domain.usage import Usage
from shared.ports import TranscriptionProvider
from tests.integration.files_stack import Stack
from tests.integration.limited_stack import stack_with

av = pytest.importorskip("av", reason="PyAV (the dev extra) writes the recordings")

from tests.builders.recordings import Recording, write_recording  # noqa: E402

SCRIPT = (
    ("Welcome to the review of the battery programme.", 0.2, 1.1),
    ("The supplier is Orion 42 in Lyon.", 1.4, 2.6),
)


class FakeSpeechEngine(TranscriptionProvider):
    """Fake: answers SCRIPT for any recording, after fetching it whole to a file as a real local engine would (so
    the bytes it was given can be checked); with `as_job`, through a job collected on the second poll."""

    def __init__(self, *, as_job: bool = False) -> None:
        self.as_job = as_job
        self.fetched: list[str] = []
        self._polls = 0

    def capability(self) -> CapabilityStatus:
        return CapabilityStatus.ready("fake-speech")

    def start(self, source: MediaSource) -> Transcript | TranscriptionJob:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / "recording"
            source.fetch(path)
            self.fetched.append(hashlib.sha256(path.read_bytes()).hexdigest())
        if self.as_job:
            return TranscriptionJob(engine="fake-speech", job_id=source.run_id)
        return _transcript(source.duration_seconds or 0.0)

    def collect(self, job: TranscriptionJob) -> Transcript | None:
        self._polls += 1
        return _transcript(3.0) if self._polls >= 2 else None

    def discard(self, job: TranscriptionJob) -> None:
        return None


def _transcript(duration: float) -> Transcript:
    segments = tuple(
        TranscriptSegment(
            text=text,
            start_seconds=start,
            end_seconds=end,
            confidence=0.9,
            words=tuple(
                TranscribedWord(text=word, start_seconds=start, end_seconds=end, confidence=0.9)
                for word in text.split()
            ),
        )
        for text, start, end in SCRIPT
    )
    usage = Usage(provider="fake-speech", operation="transcribe", priced=False)
    return Transcript(engine="fake-speech", language="en", duration_seconds=duration, segments=segments, usage=usage)


@pytest.fixture
def engine() -> FakeSpeechEngine:
    return FakeSpeechEngine()


@pytest.fixture
def speech_stack(stack: Stack, engine: FakeSpeechEngine) -> Iterator[Stack]:
    yield from stack_with(stack, transcription=engine)


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("recordings")
    made = {
        "talk.wav": Recording("talk", "wav", "wav", "pcm_s16le", rate=16_000, channels=1, seconds=3.0),
        "talk.m4a": Recording("talk", "ipod", "m4a", "aac", seconds=3.0),
        "silent.mp4": Recording("silent", "mp4", "mp4", None, video="libx264", seconds=1.0),
    }
    return {name: write_recording(recording, folder).read_bytes() for name, recording in made.items()}


MEDIA_TYPES = {"talk.wav": "audio/wav", "talk.m4a": "audio/mp4", "silent.mp4": "video/mp4"}


def processed(stack: Stack, token: str, name: str, content: bytes, media_type: str | None = None) -> dict[str, Any]:
    ticket = stack.upload(token, name, media_type or MEDIA_TYPES[name], content)
    stack.container.workflow.drain()  # type: ignore[attr-defined]
    status, record = stack.json("GET", f"/v1/files/{ticket['fileId']}", token)
    assert status == 200, record
    return record  # type: ignore[no-any-return]


def test_a_recording_is_transcribed_indexed_and_cited_to_the_second(
    speech_stack: Stack, engine: FakeSpeechEngine, recordings: dict[str, bytes]
) -> None:
    stack = speech_stack
    token = stack.token()
    content = recordings["talk.wav"]
    record = processed(stack, token, "talk.wav", content)
    current = record["current"]
    assert current["processingState"] == "indexed", current
    # The engine was given the stored bytes, fetched range by range.
    assert engine.fetched == [hashlib.sha256(content).hexdigest()]
    transcription = current["transcription"]
    assert transcription["state"] == "recognized" and transcription["engine"] == "fake-speech"
    assert transcription["language"] == "en" and transcription["confidence"] == pytest.approx(0.9)
    assert transcription["durationSeconds"] == pytest.approx(3.0, abs=0.05)  # the probe's, from the header
    assert transcription["lowConfidence"] is False and current["ocr"] is None

    hits = stack.json("POST", "/v1/search", token, {"query": "Orion 42 supplier"})[1]
    cited = next(hit["citation"] for hit in hits["hits"] if hit["citation"]["fileId"] == record["fileId"])
    assert cited["kind"] == "transcription" and cited["speechConfidence"] == pytest.approx(0.9)
    assert (cited["startSeconds"], cited["endSeconds"]) == (1.4, 2.6)
    assert cited["ocrConfidence"] is None and cited["page"] is None

    document = stack.json("GET", f"/v1/files/{record['fileId']}/document", token)[1]
    assert f"[00:01{RANGE_DASH}00:02] The supplier is Orion 42 in Lyon." in document["markdown"]
    assert document["blocks"][1]["location"] == {"startSeconds": 1.4, "endSeconds": 2.6}


def test_a_transcription_job_is_polled_until_it_is_done(stack: Stack, recordings: dict[str, bytes]) -> None:
    engine = FakeSpeechEngine(as_job=True)
    for speech in stack_with(stack, transcription=engine):
        record = processed(speech, speech.token(), "talk.m4a", recordings["talk.m4a"])
        assert record["current"]["processingState"] == "indexed", record["current"]
        assert record["current"]["transcription"]["state"] == "recognized"


def test_a_video_without_an_audio_track_fails_saying_so(
    speech_stack: Stack, engine: FakeSpeechEngine, recordings: dict[str, bytes]
) -> None:
    record = processed(speech_stack, speech_stack.token(), "silent.mp4", recordings["silent.mp4"])
    failure = record["current"]["failure"]
    assert failure["reason"] == "not-transcribable", record["current"]
    assert failure["detail"] == "the video has no audio track, so there is nothing to transcribe"
    assert engine.fetched == []  # refused from its headers: never fetched, never sent to the engine


def test_a_recording_past_the_duration_limit_fails_naming_the_setting(
    stack: Stack, recordings: dict[str, bytes]
) -> None:
    settings = stack.container.settings.model_copy(update={"max_media_seconds": 2})
    container = Container(settings, adapters_for(settings, transcription=FakeSpeechEngine()))
    with overridden(container):
        try:
            short = replace(stack, container=container)
            failure = processed(short, short.token(), "talk.wav", recordings["talk.wav"])["current"]["failure"]
        finally:
            container.workflow.drain()  # type: ignore[attr-defined]
            container.database.close()
    assert failure["reason"] == "not-transcribable"
    assert "QUIRE_MAX_MEDIA_SECONDS" in failure["detail"], failure


def test_without_a_speech_engine_a_recording_fails_saying_why(stack: Stack, recordings: dict[str, bytes]) -> None:
    class Unavailable(FakeSpeechEngine):
        def capability(self) -> CapabilityStatus:
            return CapabilityStatus.unavailable("fake-speech", "the model is not installed: install the local extra")

    for bare in stack_with(stack, transcription=Unavailable()):
        failure = processed(bare, bare.token(), "talk.wav", recordings["talk.wav"])["current"]["failure"]
        assert failure["reason"] == "no-transcription"
        assert failure["detail"] == "the model is not installed: install the local extra"
    assert Capability.TRANSCRIPTION.value == "transcription"


def test_a_renamed_file_is_rejected_at_upload_not_transcribed(speech_stack: Stack, engine: FakeSpeechEngine) -> None:
    token = speech_stack.token()
    ticket = speech_stack.upload(token, "talk.mp3", "audio/mpeg", b"%PDF-1.7\n" + b"x" * 200)
    current = speech_stack.json("GET", f"/v1/files/{ticket['fileId']}", token)[1]["current"]
    assert current["state"] == "rejected"
    assert current["rejectionReason"].endswith("it looks like a PDF"), current
    assert engine.fetched == []


def test_transcription_is_metered_by_the_second_and_limited_by_the_minute_per_day(
    own_stack: Stack, recordings: dict[str, bytes], tmp_path: Path
) -> None:
    """One minute a day: a 61-second recording (two minutes begun) fails spend-limit before the engine is asked;
    a 3-second one (a minute begun) is transcribed and metered by the second; then a new recording is refused at
    upload with a 429, while a document is still taken."""
    long = Recording(
        "long", "mp3", "mp3", "libmp3lame", rate=8_000, channels=1, seconds=61.0, codec_options={"b": "8k"}
    )
    long_content = write_recording(long, tmp_path).read_bytes()
    settings = own_stack.container.settings.model_copy(update={"limit_transcription_minutes_per_day": 1})
    engine = FakeSpeechEngine()
    container = Container(settings, adapters_for(settings, transcription=engine))
    with overridden(container):
        try:
            limited = replace(own_stack, container=container)
            token = limited.token()
            refused = processed(limited, token, "long.mp3", long_content, "audio/mpeg")["current"]
            assert refused["failure"]["reason"] == "spend-limit", refused
            assert refused["failure"]["detail"].startswith(
                "this needs 2 minutes, more than the tenant's daily transcription limit of 1 minute"
            )
            assert engine.fetched == []  # the engine was not asked

            spoken = processed(limited, token, "talk.wav", recordings["talk.wav"])["current"]
            assert spoken["processingState"] == "indexed", spoken
            lines = limited.json("GET", "/v1/usage", token)[1]["lines"]
            (metered,) = [line for line in lines if line["step"] == "transcription"]
            assert (metered["seconds"], metered["provider"], metered["calls"]) == (3, "fake-speech", 1)

            body = {"collectionId": "docs", "filename": "more.wav", "mediaType": "audio/wav", "byteSize": 100}
            status, answer = limited.json("POST", "/v1/uploads", token, body)
            assert (status, answer["limit"]) == (429, "transcription_minutes_per_day"), answer
            # A document is not a recording: the same tenant still uploads one.
            text = {**body, "filename": "note.md", "mediaType": "text/markdown"}
            assert limited.json("POST", "/v1/uploads", token, text)[0] == 201
        finally:
            container.workflow.drain()  # type: ignore[attr-defined]
            container.database.close()
