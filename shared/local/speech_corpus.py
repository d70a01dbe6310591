"""Recordings generated on the spot, for the transcription tests and the benchmark: nothing binary is committed.

Each sentence is spoken by espeak-ng (Debian's `espeak-ng`, installed by `make speech`), placed at a known second
of a mono recording with silence between, then encoded by PyAV into the containers people upload (WAV, FLAC,
MP3, Ogg Opus, M4A, an MP4 with a still frame). Each recording keeps where each sentence was placed and what it
said: the ground truth that the word error rate and the segments' times are measured against.
"""

import io
import re
import shutil
import subprocess
import wave
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# espeak-ng's own rate; everything is mixed at it and resampled by the encoder where a codec wants another.
SPEECH_RATE = 22_050
ESPEAK = "espeak-ng"
# Words per minute: espeak-ng's default (175) runs words together more than people do.
WORDS_PER_MINUTE = 160

# Sentences espeak-ng says clearly and the engines transcribe (numbers in digits, as the engines write them).
# Identifiers a citation must carry whole: "Orion 42" and "Falcon 42" (espeak's "KESTREL-88" is not a word anyone
# would recognise).
SCRIPT = (
    "The quarterly report was filed on Tuesday morning.",
    "Please send the signed contract to the legal team before Friday.",
    "The project code name is Falcon 42.",
    "Our warehouse shipped 400 boxes last week.",
    "Revenue grew by 12 percent compared with last year.",
    "The meeting moved to the second floor conference room.",
    "Every invoice needs a purchase order number.",
    "The server migration finished without any data loss.",
    "Customer support answered most tickets within one hour.",
    "The board approved the new budget for the research lab.",
)


@dataclass(frozen=True)
class PlacedSentence:
    text: str
    start_seconds: float
    end_seconds: float


@dataclass(frozen=True)
class SpokenRecording:
    """16-bit mono samples at SPEECH_RATE, and where each sentence was placed in them."""

    samples: Any  # numpy int16 array
    sentences: tuple[PlacedSentence, ...]

    @property
    def duration_seconds(self) -> float:
        return len(self.samples) / SPEECH_RATE

    @property
    def text(self) -> str:
        return " ".join(sentence.text for sentence in self.sentences)


@dataclass(frozen=True)
class EncodedRecording:
    filename: str
    media_type: str
    content: bytes


def espeak_missing() -> str | None:
    """Why speech cannot be generated here, or None when it can."""
    if shutil.which(ESPEAK) is None:
        return f"{ESPEAK} is not installed: `make speech` installs it (apt-get install espeak-ng)"
    return None


def spoken(text: str, *, voice: str = "en-us") -> Any:
    """`text` as espeak-ng says it: int16 samples at SPEECH_RATE."""
    import numpy as np

    completed = subprocess.run(
        [ESPEAK, "-v", voice, "-s", str(WORDS_PER_MINUTE), "--stdout", text], capture_output=True, check=True
    )
    with wave.open(io.BytesIO(completed.stdout)) as speech:
        if speech.getframerate() != SPEECH_RATE or speech.getnchannels() != 1 or speech.getsampwidth() != 2:
            raise RuntimeError("espeak-ng did not speak 16-bit mono at 22,050 Hz")
        return np.frombuffer(speech.readframes(speech.getnframes()), dtype=np.int16)


def spoken_recording(
    sentences: Sequence[str] = SCRIPT,
    *,
    lead_seconds: float = 1.0,
    gap_seconds: float = 2.5,
    tail_seconds: float = 1.0,
    voice: str = "en-us",
) -> SpokenRecording:
    """Each sentence spoken, the first `lead_seconds` in, `gap_seconds` of silence between them."""
    import numpy as np

    voices = [spoken(sentence, voice=voice) for sentence in sentences]
    placed, at = [], lead_seconds
    for sentence, samples in zip(sentences, voices, strict=True):
        length = len(samples) / SPEECH_RATE
        placed.append(PlacedSentence(sentence, round(at, 3), round(at + length, 3)))
        at += length + gap_seconds
    total = int((at - gap_seconds + tail_seconds) * SPEECH_RATE)
    mixed = np.zeros(total, dtype=np.int16)
    for place, samples in zip(placed, voices, strict=True):
        first = int(place.start_seconds * SPEECH_RATE)
        mixed[first : first + len(samples)] = samples
    return SpokenRecording(mixed, tuple(placed))


def silence(seconds: float) -> SpokenRecording:
    import numpy as np

    return SpokenRecording(np.zeros(int(seconds * SPEECH_RATE), dtype=np.int16), ())


# container format, codec, codec sample rate (None: the speech's own), sample format, media type, extension
_AUDIO_FORMATS = {
    "wav": ("wav", "pcm_s16le", None, "s16", "audio/wav", "wav"),
    "flac": ("flac", "flac", None, "s16", "audio/flac", "flac"),
    "mp3": ("mp3", "libmp3lame", 22_050, "s16p", "audio/mpeg", "mp3"),
    "opus": ("ogg", "libopus", 48_000, "s16", "audio/ogg", "ogg"),
    "m4a": ("ipod", "aac", 44_100, "fltp", "audio/mp4", "m4a"),
}
AUDIO_FORMATS = tuple(_AUDIO_FORMATS)


def encoded(recording: SpokenRecording, kind: str, *, name: str = "speech") -> EncodedRecording:
    """The recording in one of AUDIO_FORMATS, encoded by PyAV (FFmpeg's encoders)."""
    import av

    container_format, codec, rate, sample_format, media_type, extension = _AUDIO_FORMATS[kind]
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=container_format) as container:
        stream = container.add_stream(codec, rate=rate or SPEECH_RATE, layout="mono")
        _write_audio(container, stream, recording, sample_format)
    return EncodedRecording(f"{name}.{extension}", media_type, buffer.getvalue())


def video_with_audio(recording: SpokenRecording, *, name: str = "talk") -> EncodedRecording:
    """An MP4 of one still frame held for the whole recording (H.264 at one frame a second) and its speech (AAC)."""
    return _video(recording, name=name, with_audio=True)


def video_only(seconds: float = 5.0, *, name: str = "silent-film") -> EncodedRecording:
    """An MP4 with a video track and no audio track at all."""
    return _video(silence(seconds), name=name, with_audio=False)


def _video(recording: SpokenRecording, *, name: str, with_audio: bool) -> EncodedRecording:
    import av
    import numpy as np

    buffer = io.BytesIO()
    seconds = max(int(recording.duration_seconds + 0.999), 1)
    with av.open(buffer, mode="w", format="mp4") as container:
        video = container.add_stream("libx264", rate=1)
        video.width, video.height, video.pix_fmt = 320, 240, "yuv420p"
        audio = container.add_stream("aac", rate=44_100, layout="mono") if with_audio else None
        still = np.full((240, 320, 3), (40, 90, 160), dtype=np.uint8)
        still[100:140, 60:260] = 250  # a bar, so the frame is not one flat colour
        for index in range(seconds):
            frame = av.VideoFrame.from_ndarray(still, format="rgb24")
            frame.pts = index
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        if audio is not None:
            _write_audio(container, audio, recording, "fltp")
    return EncodedRecording(f"{name}.mp4", "video/mp4", buffer.getvalue())


def _write_audio(container: Any, stream: Any, recording: SpokenRecording, sample_format: str) -> None:
    import av

    resampler = av.AudioResampler(format=sample_format, layout="mono", rate=stream.codec_context.sample_rate)
    step = SPEECH_RATE  # a second at a time
    for first in range(0, max(len(recording.samples), 1), step):
        frame = av.AudioFrame.from_ndarray(
            recording.samples[first : first + step].reshape(1, -1), format="s16", layout="mono"
        )
        frame.sample_rate = SPEECH_RATE
        for converted in resampler.resample(frame):
            container.mux(stream.encode(converted))
    for converted in resampler.resample(None):
        container.mux(stream.encode(converted))
    container.mux(stream.encode(None))


def normalised_words(text: str) -> list[str]:
    """Lower-case words and numbers, punctuation dropped and "%" read as "percent", as a person would read them."""
    return re.findall(r"[a-z0-9']+", text.lower().replace("%", " percent "))


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / words of `reference`, over `normalised_words`: the
    Levenshtein distance between the two word sequences."""
    expected, heard = normalised_words(reference), normalised_words(hypothesis)
    if not expected:
        return float(len(heard) > 0)
    row = list(range(len(heard) + 1))
    for index, word in enumerate(expected, start=1):
        diagonal, row[0] = row[0], index
        for position, candidate in enumerate(heard, start=1):
            diagonal, row[position] = (
                row[position],
                min(row[position] + 1, row[position - 1] + 1, diagonal + (word != candidate)),
            )
    return row[len(heard)] / len(expected)
