"""The speech engine's audio, without the model: recordings decoded to 16 kHz mono and handed out in windows cut
at quiet moments, nothing lost or repeated; the length bound counted as it decodes; a word's start moved out of the
pause before it. Tones and silence made with numpy, encoded by PyAV."""

from pathlib import Path

import numpy as np
import pytest

from shared.adapters.local.audio_decoding import (
    NO_AUDIO_IN_VIDEO,
    SAMPLE_RATE,
    UNDECODABLE,
    AudioWindows,
    onset,
    opened,
)
from shared.domain.errors import TranscriptionFailed
from shared.local import speech_corpus
from shared.local.speech_corpus import SPEECH_RATE, SpokenRecording


def tone(seconds: float, *, rate: int = SPEECH_RATE, loudness: float = 0.5) -> np.ndarray:
    times = np.arange(int(seconds * rate)) / rate
    return loudness * np.sin(2 * np.pi * 440 * times)


def quiet_tone(seconds: float, *, rate: int = SPEECH_RATE) -> np.ndarray:
    return tone(seconds, rate=rate, loudness=0.2)


def silent(seconds: float, *, rate: int = SPEECH_RATE) -> np.ndarray:
    return np.zeros(int(seconds * rate))


def wav_file(signal: np.ndarray, directory: Path) -> str:
    samples = (signal * 32767).astype(np.int16)
    path = directory / "signal.wav"
    path.write_bytes(speech_corpus.encoded(SpokenRecording(samples, ()), "wav").content)
    return str(path)


def test_windows_are_cut_at_the_quiet_moment_and_together_are_the_whole_recording(tmp_path: Path) -> None:
    # 20 s of tone with a 0.3 s pause at 6.5 s and at 13 s: windows of 8 s may be cut in their last 4 s.
    signal = np.concatenate([tone(6.5), silent(0.3), tone(6.2), silent(0.3), tone(6.7)])
    with opened(wav_file(signal, tmp_path)) as container:
        decoding = AudioWindows(container, container.streams.audio[0], max_seconds=60)
        windows = list(decoding.windows(8))

    starts = [start for start, _ in windows]
    assert starts[0] == 0 and starts[1] == pytest.approx(6.65, abs=0.1) and starts[2] == pytest.approx(13.15, abs=0.1)
    for (start, samples), following in zip(windows, starts[1:], strict=False):
        assert start + len(samples) / SAMPLE_RATE == pytest.approx(following)  # nothing lost, nothing twice
    assert sum(len(samples) for _, samples in windows) == decoding.samples
    assert decoding.seconds == pytest.approx(20, abs=0.01)


def test_a_recording_longer_than_the_limit_is_refused_as_it_decodes(tmp_path: Path) -> None:
    with opened(wav_file(tone(12), tmp_path)) as container:
        decoding = AudioWindows(container, container.streams.audio[0], max_seconds=5)
        with pytest.raises(TranscriptionFailed, match="QUIRE_MAX_MEDIA_SECONDS"):
            list(decoding.windows(60))


def test_what_has_no_audio_or_is_no_recording_is_refused_before_anything_decodes(tmp_path: Path) -> None:
    video = tmp_path / "film.mp4"
    video.write_bytes(speech_corpus.video_only(2).content)
    text = tmp_path / "notes.wav"
    text.write_bytes(b"these are notes, not sound\n" * 100)

    with pytest.raises(TranscriptionFailed) as no_audio:
        opened(str(video))
    with pytest.raises(TranscriptionFailed) as undecodable:
        opened(str(text))
    assert no_audio.value.detail == NO_AUDIO_IN_VIDEO and undecodable.value.detail == UNDECODABLE


def test_a_word_placed_in_the_pause_before_it_starts_where_its_sound_does() -> None:
    # The previous word's last sound (1.0-1.2 s), a pause, then the word (2.5-3.0 s); the model said 1.0-3.0.
    pieces = [(silent, 1.0), (tone, 0.2), (silent, 1.3), (quiet_tone, 0.5), (silent, 1.0)]
    window = np.concatenate([make(seconds, rate=SAMPLE_RATE) for make, seconds in pieces]).astype(np.float32)

    assert onset(window, 1.0, 3.0) == pytest.approx(2.5, abs=0.011)
    # A word the model placed well is left where it is, and no word moves earlier than the model said.
    assert onset(window, 2.5, 3.0) == pytest.approx(2.5, abs=0.011)
    assert onset(window, 2.7, 3.0) == 2.7
    assert onset(window, 3.2, 3.6) == 3.2  # silence only: nothing to move to


def test_a_concat_list_naming_a_recording_beside_it_is_refused_not_followed(tmp_path: Path) -> None:
    """FFmpeg's concat demuxer would open the files a list names: only recording demuxers and the file protocol are
    allowed, so the list is refused though the recording it names would decode (checked first without the limits)."""
    import av

    beside = tmp_path / "secret.wav"
    beside.write_bytes(speech_corpus.encoded(speech_corpus.silence(1.0), "wav").content)
    listing = tmp_path / "list.ffconcat"
    listing.write_text("ffconcat version 1.0\nfile 'secret.wav'\n")
    with av.open(str(listing)) as followed:  # what an unbounded open does: the named file's audio
        assert followed.streams.audio
    with pytest.raises(TranscriptionFailed):
        opened(str(listing))
