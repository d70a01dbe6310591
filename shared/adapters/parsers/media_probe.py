"""Recordings (issue 35): a bounded, pure-Python probe of a media container's headers.

`probe_media(content, limits)` reads WAV (RIFF, RIFX, RF64), MP3, FLAC, Ogg (Opus, Vorbis, FLAC, Speex), MP4, M4A,
MOV, WebM and Matroska, and answers a `MediaInfo` (type, container, duration, streams, the first audio stream's
channels, rate and codec) or a `MediaRefusal` (a reason and a sentence naming the number and the limit). It decodes
no audio or video: no native code, no dependency, nothing but the standard library, so it may run anywhere, the
upload's first check included. `content` is bytes, or a seekable binary stream (a `RangedReader` over storage), of
which it reads at most `MediaLimits.max_header_bytes`; what it skips (an MP4's media, a WAV's samples) it seeks
past. Every malformed input is a refusal; only a programmer's error (a stream that cannot seek) raises.

The containers are read in `media/` (one module each); the values and sentences are `shared/domain/media.py`, and
what the first bytes alone tell is `shared/domain/media_sniffing.py:sniff_media_type`.
"""

import math

from shared.adapters.parsers.media.flac import read_flac
from shared.adapters.parsers.media.isobmff import read_iso
from shared.adapters.parsers.media.matroska import read_matroska
from shared.adapters.parsers.media.mpeg_audio import after_id3_tags, read_mpeg_audio
from shared.adapters.parsers.media.ogg import read_ogg
from shared.adapters.parsers.media.reading import Probed, Refused, SeekableStream, Source, Stream
from shared.adapters.parsers.media.riff import read_wav
from shared.domain.media import (
    CONTAINER_LABELS,
    MediaInfo,
    MediaLimits,
    MediaRefusal,
    MediaRefusalReason,
    implausible,
    no_audio,
    refusal,
    too_long,
)
from shared.domain.media_sniffing import EBML_MAGIC, QUICKTIME_FIRST_ATOMS, mpeg_frame, sniff_media_type
from shared.domain.sniffing import describe

__all__ = ["MediaInfo", "MediaLimits", "MediaRefusal", "SeekableStream", "probe_media", "sniff_media_type"]

MEDIA_LIMITS = MediaLimits()
_HEAD_BYTES = 16


def probe_media(content: bytes | SeekableStream, limits: MediaLimits = MEDIA_LIMITS) -> MediaInfo | MediaRefusal:
    """What the recording's headers say, within `limits`, or why it is refused."""
    source = Source(content, limits)
    try:
        return _judged(_read(source), source.size, limits)
    except Refused as refused:
        return refused.refusal


def _read(source: Source) -> Probed:
    head = source.read(0, _HEAD_BYTES)
    if head[:4] in (b"RIFF", b"RIFX", b"RF64") and head[8:12] == b"WAVE":
        return read_wav(source)
    if head.startswith(b"OggS"):
        return read_ogg(source)
    if head.startswith(EBML_MAGIC):
        return read_matroska(source)
    if head[4:8] == b"ftyp" or head[4:8] in QUICKTIME_FIRST_ATOMS:
        return read_iso(source)
    start = after_id3_tags(source) if head.startswith(b"ID3") else 0
    if source.read(start, 4) == b"fLaC":
        return read_flac(source, start)
    if start or mpeg_frame(head) is not None:
        return read_mpeg_audio(source, start)
    raise Refused(
        MediaRefusalReason.NOT_MEDIA,
        "the file is not a recording Quire reads (WAV, MP3, FLAC, Ogg, MP4, M4A, MOV, WebM or Matroska): it looks"
        f" like {describe(source.read(0, 2048))}",
    )


def _judged(probed: Probed, size: int, limits: MediaLimits) -> MediaInfo | MediaRefusal:
    """The limits, in the order a user would fix them: what is there, then what the header claims."""
    audio = [stream for stream in probed.streams if stream.kind == "audio"]
    video = [stream for stream in probed.streams if stream.kind == "video"]
    if not audio:
        return no_audio(len(video))
    first = audio[0]
    refused = _audio_refusal(first, limits) or _duration_refusal(probed, size, limits)
    if refused is not None:
        return refused
    assert probed.duration_seconds is not None  # _duration_refusal refuses a file without one
    return MediaInfo(
        media_type=probed.media_type,
        container=probed.container,
        duration_seconds=probed.duration_seconds,
        audio_streams=len(audio),
        video_streams=len(video),
        channels=first.channels,
        sample_rate=first.sample_rate,
        audio_codec=first.codec,
        video_codec=video[0].codec if video else None,
    )


def _audio_refusal(first: Stream, limits: MediaLimits) -> MediaRefusal | None:
    if first.channels < 1:
        return refusal(MediaRefusalReason.MALFORMED, "the audio stream declares no channels")
    if first.channels > limits.max_channels:
        return refusal(
            MediaRefusalReason.TOO_MANY_CHANNELS,
            f"the audio has {first.channels} channels; the limit is {limits.max_channels}",
        )
    if not limits.min_sample_rate <= first.sample_rate <= limits.max_sample_rate:
        return refusal(
            MediaRefusalReason.SAMPLE_RATE,
            f"the audio's sample rate is {first.sample_rate:,} Hz; Quire reads {limits.min_sample_rate:,} to"
            f" {limits.max_sample_rate:,} Hz",
        )
    return None


def _duration_refusal(probed: Probed, size: int, limits: MediaLimits) -> MediaRefusal | None:
    seconds = probed.duration_seconds
    if seconds is None:
        return refusal(
            MediaRefusalReason.UNKNOWN_DURATION,
            f"the {CONTAINER_LABELS[probed.container]} file does not say how long it lasts: save it again with an"
            " editor that finishes the file",
        )
    if not math.isfinite(seconds) or seconds < 0:
        return refusal(MediaRefusalReason.MALFORMED, "the header's duration is not a number of seconds")
    if seconds == 0:
        return refusal(
            MediaRefusalReason.NO_AUDIO, "the recording lasts no time at all, so there is nothing to transcribe"
        )
    if seconds > limits.plausible_below_seconds and size < seconds * limits.min_bytes_per_second:
        return implausible(seconds, size)
    if seconds > limits.max_seconds:
        return too_long(seconds, limits)
    return None
