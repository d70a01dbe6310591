"""Recordings (issue 35): what a media probe answers, the bounds it keeps, and the sentences a refusal says.

The probe (`shared/adapters/parsers/media_probe.py`) reads a recording's container headers, never its audio or
video, and answers a `MediaInfo` or a `MediaRefusal`: a reason from the closed set below, and a sentence the
uploader can act on that names the number and the limit. `media_sniffing.py` holds what can be told from the
first bytes alone.
"""

import math
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

AUDIO_WAV = "audio/wav"
AUDIO_MPEG = "audio/mpeg"
AUDIO_MP4 = "audio/mp4"
AUDIO_FLAC = "audio/flac"
AUDIO_OGG = "audio/ogg"
AUDIO_WEBM = "audio/webm"
VIDEO_MP4 = "video/mp4"
VIDEO_QUICKTIME = "video/quicktime"
VIDEO_WEBM = "video/webm"
VIDEO_MATROSKA = "video/x-matroska"
MEDIA_TYPES = frozenset(
    {
        AUDIO_WAV,
        AUDIO_MPEG,
        AUDIO_MP4,
        AUDIO_FLAC,
        AUDIO_OGG,
        AUDIO_WEBM,
        VIDEO_MP4,
        VIDEO_QUICKTIME,
        VIDEO_WEBM,
        VIDEO_MATROSKA,
    }
)
# Types one container's bytes can rightly be declared as: an MP4 with no video track is audio/mp4 whatever its
# brand says, and a WebM's type turns on whether it has a video track, which may lie past the first bytes.
CONTAINER_FAMILIES: tuple[frozenset[str], ...] = (
    frozenset({AUDIO_MP4, VIDEO_MP4, VIDEO_QUICKTIME}),
    frozenset({AUDIO_WEBM, VIDEO_WEBM, VIDEO_MATROSKA}),
)
# How a sentence names each container the probe reads.
CONTAINER_LABELS = {
    "wav": "WAV",
    "mp3": "MP3",
    "flac": "FLAC",
    "ogg": "Ogg",
    "mp4": "MP4",
    "mov": "QuickTime",
    "webm": "WebM",
    "matroska": "Matroska",
}
# The setting the duration limit is read from (named in the refusal, so that an operator knows what to raise).
MAX_SECONDS_SETTING = "QUIRE_MAX_MEDIA_SECONDS"


def same_container_family(sniffed: str, declared: str) -> bool:
    """Whether bytes sniffed as one type may be what was declared as the other (the same type, or one family)."""
    return sniffed == declared or any({sniffed, declared} <= family for family in CONTAINER_FAMILIES)


class MediaRefusalReason(StrEnum):
    """Closed set: each exists because what the uploader should do differs."""

    NOT_MEDIA = "not-media"  # not a container the probe reads
    UNSUPPORTED = "unsupported"  # a container it reads, in a variant it does not (a free-format MP3, Ogg video)
    MALFORMED = "malformed"  # the structure contradicts itself
    TRUNCATED = "truncated"  # the structure says the file goes on past its end
    TOO_COMPLEX = "too-complex"  # past a bound on the walk: boxes, elements, depth, header bytes
    NO_AUDIO = "no-audio"
    UNKNOWN_DURATION = "unknown-duration"
    IMPLAUSIBLE_DURATION = "implausible-duration"  # the header claims more time than its bytes can hold
    TOO_LONG = "too-long"
    TOO_MANY_CHANNELS = "too-many-channels"
    SAMPLE_RATE = "sample-rate"
    TOO_MANY_STREAMS = "too-many-streams"


class MediaRefusal(BaseModel):
    model_config = ConfigDict(frozen=True)

    reason: MediaRefusalReason
    sentence: str


class MediaInfo(BaseModel):
    """What the headers say. The audio figures are the first audio stream's (the one a transcriber reads)."""

    model_config = ConfigDict(frozen=True)

    media_type: str  # one of MEDIA_TYPES, refined by the tracks found (an MP4 without video is audio/mp4)
    container: str  # wav, mp3, flac, ogg, mp4, mov, webm, matroska
    duration_seconds: float
    audio_streams: int
    video_streams: int
    channels: int
    sample_rate: int
    audio_codec: str | None
    video_codec: str | None


class MediaLimits(BaseModel):
    """Every dimension a recording's header can claim or grow in; the probe refuses past each one."""

    model_config = ConfigDict(frozen=True)

    max_seconds: float = 4 * 3600
    max_channels: int = 8
    min_sample_rate: int = 8_000
    max_sample_rate: int = 192_000
    max_streams: int = 16
    # Boxes, chunks, EBML elements, Ogg pages and MP3 frames walked, and how deep boxes and elements nest.
    max_elements: int = 10_000
    max_depth: int = 16
    # Bytes read from the source, the tail included (Ogg's last page, a live WebM's last cluster); what is skipped
    # by seeking (an MP4's mdat, a WAV's samples) is not read.
    max_header_bytes: int = 2 * 1024 * 1024
    # Below this many bytes per second of claimed duration a header is not believed: Opus speech at its lowest
    # bitrate (6 kbit/s) takes 750; MP3's lowest is 1,000. Judged only past `plausible_below_seconds`, so that a
    # short file never trips it.
    min_bytes_per_second: float = 500.0
    plausible_below_seconds: float = 600.0


def spoken_duration(seconds: float) -> str:
    """A duration as a sentence says it: "45 seconds", "12.5 minutes", "5.2 hours"."""
    if not math.isfinite(seconds):
        return "an endless time"
    if seconds < 120:
        return _counted(seconds, "second")
    if seconds < 2 * 3600:
        return _counted(seconds / 60, "minute")
    return _counted(seconds / 3600, "hour")


def _counted(value: float, unit: str) -> str:
    figure = _figure(value)
    return f"{figure} {unit}" if figure == "1" else f"{figure} {unit}s"


def spoken_bytes(size: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if size >= scale:
            return f"{_figure(size / scale)} {unit}"
    return f"{size} bytes"


def _figure(value: float) -> str:
    return f"{round(value, 1):g}"


def refusal(reason: MediaRefusalReason, sentence: str) -> MediaRefusal:
    return MediaRefusal(reason=reason, sentence=sentence)


def too_long(seconds: float, limits: MediaLimits) -> MediaRefusal:
    return refusal(
        MediaRefusalReason.TOO_LONG,
        f"the recording lasts {spoken_duration(seconds)}; the limit is {spoken_duration(limits.max_seconds)}"
        f" ({MAX_SECONDS_SETTING})",
    )


def implausible(seconds: float, size: int) -> MediaRefusal:
    return refusal(
        MediaRefusalReason.IMPLAUSIBLE_DURATION,
        f"the header claims {spoken_duration(seconds)} of audio in {spoken_bytes(size)}: the file is damaged or"
        " its header is not true",
    )


def no_audio(video_streams: int) -> MediaRefusal:
    what = "the video has no audio track" if video_streams else "the file has no audio stream"
    return refusal(MediaRefusalReason.NO_AUDIO, f"{what}, so there is nothing to transcribe")
