"""Audio for the speech engine, in the sandbox's child: a recording opened by FFmpeg (PyAV) with only the file
protocol and the demuxers of the formats people record in, its first audio stream decoded and resampled to 16 kHz
mono float32, handed out in windows cut at quiet moments, and where a word's sound begins (shared/adapters/local/
whisper_transcription.py, docs/transcription.md).
"""

import sys
from collections.abc import Iterator
from typing import Any

from shared.domain.errors import TranscriptionFailed

SAMPLE_RATE = 16_000
# FFmpeg's demuxers the child may open (its format_whitelist): WAV, MP3, FLAC, Ogg (Opus, Vorbis), the MP4 family
# (M4A, MOV, 3GP), Matroska and WebM, raw AAC, AIFF. Everything else FFmpeg could open (an HLS or concat
# playlist naming other files, an image sequence) is refused as undecodable.
DEMUXERS = "wav,mp3,flac,ogg,mov,matroska,aac,aiff"
# A damaged packet is skipped, as FFmpeg's own tools do; more than this many and the recording is refused.
MAX_DAMAGED_PACKETS = 20
# Where a window may be cut: its quietest stretch of this length within its last CUT_SEARCH_SECONDS.
CUT_SEARCH_SECONDS = 10.0
CUT_FRAME_SECONDS = 0.1
# Whisper starts a word that follows a pause early, inside the pause (measured: up to 3 s early with base, the word
# placed on the previous word's last sound, before the pause). A word starts where the last sound before the next
# word begins: sound is what reaches ONSET_SHARE of the loudest 10 ms there, a pause ONSET_PAUSE_SECONDS of less.
ONSET_SHARE = 0.1
ONSET_FRAME_SECONDS = 0.01
ONSET_PAUSE_SECONDS = 0.15
NO_AUDIO_IN_VIDEO = "the video has no audio track, so there is nothing to transcribe"
NO_AUDIO = "the file has no audio track, so there is nothing to transcribe"
UNDECODABLE = "the recording could not be decoded: re-encode it (MP3, M4A or WAV) and upload it again"


def too_long(seconds: float, limit: float) -> str:
    """Why a recording this long is not transcribed, naming the setting."""
    return (
        f"the recording is {clock(seconds)} long; the limit is {clock(limit)} (QUIRE_MAX_MEDIA_SECONDS):"
        " split it and upload the parts"
    )


def clock(seconds: float) -> str:
    """2:05 or 1:02:05."""
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def opened(path: str) -> Any:
    """The recording's container, with at least one audio stream. Raises TranscriptionFailed with the sentence its
    owner reads (FFmpeg's own words go to stderr, the log)."""
    import av

    try:
        container = av.open(
            path, options={"protocol_whitelist": "file", "format_whitelist": DEMUXERS}, metadata_errors="ignore"
        )
    except (av.FFmpegError, ValueError, UnicodeDecodeError) as error:
        print(f"FFmpeg could not open the recording: {error}", file=sys.stderr)
        raise TranscriptionFailed(UNDECODABLE) from error
    if not container.streams.audio:
        has_video = bool(container.streams.video)
        container.close()
        raise TranscriptionFailed(NO_AUDIO_IN_VIDEO if has_video else NO_AUDIO)
    return container


def declared_seconds(container: Any, stream: Any) -> float | None:
    """The audio's length as the container says it, before anything is decoded (None when it does not say)."""
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        return float(container.duration) / 1_000_000  # AV_TIME_BASE
    return None


class AudioWindows:
    """The audio stream decoded and resampled to SAMPLE_RATE mono float32, handed out in windows."""

    def __init__(self, container: Any, stream: Any, max_seconds: float) -> None:
        self._container = container
        self._stream = stream
        self._max_samples = int(max_seconds * SAMPLE_RATE)
        self._max_seconds = max_seconds
        self.samples = 0

    @property
    def seconds(self) -> float:
        return self.samples / SAMPLE_RATE

    def windows(self, window_seconds: float) -> Iterator[tuple[float, Any]]:
        """(start second, samples) of consecutive windows of about `window_seconds`, each but the last cut at its
        quietest moment near its end, so a word is seldom cut in two."""
        import numpy as np

        window = max(int(window_seconds * SAMPLE_RATE), 1)
        search = min(int(CUT_SEARCH_SECONDS * SAMPLE_RATE), window // 2)
        pending: list[Any] = []
        held, offset = 0, 0
        for chunk in self._chunks():
            pending.append(chunk)
            held += len(chunk)
            if held < window + search:
                continue
            joined = np.concatenate(pending)
            while len(joined) >= window + search:
                cut = quietest(joined, window - search, window)
                yield offset / SAMPLE_RATE, joined[:cut]
                offset += cut
                joined = joined[cut:]
            pending, held = [joined], len(joined)
        if held:
            yield offset / SAMPLE_RATE, np.concatenate(pending)

    def _chunks(self) -> Iterator[Any]:
        import av
        import numpy as np

        resampler = av.AudioResampler(format="flt", layout="mono", rate=SAMPLE_RATE)
        damaged = 0
        packets = self._container.demux(self._stream)
        while True:
            try:
                packet = next(packets)
            except StopIteration:
                break
            except av.FFmpegError as error:
                print(f"demuxing stopped: {error}", file=sys.stderr)
                break  # what came before is kept; a truncated recording is told by its length
            try:
                frames = [converted for frame in packet.decode() for converted in resampler.resample(frame)]
            except av.FFmpegError as error:
                damaged += 1
                print(f"a damaged packet was skipped: {error}", file=sys.stderr)
                if damaged > MAX_DAMAGED_PACKETS:
                    raise TranscriptionFailed(
                        f"the recording is damaged (more than {MAX_DAMAGED_PACKETS} packets could not be decoded):"
                        " re-encode it and upload it again"
                    ) from error
                continue
            except ValueError as error:  # the stream changed its sample format or layout midway
                print(f"the audio changed format midway: {error}", file=sys.stderr)
                raise TranscriptionFailed(UNDECODABLE) from error
            for frame in frames:
                yield self._counted(np.asarray(frame.to_ndarray(), dtype=np.float32).reshape(-1))
        for frame in resampler.resample(None):
            yield self._counted(np.asarray(frame.to_ndarray(), dtype=np.float32).reshape(-1))

    def _counted(self, samples: Any) -> Any:
        self.samples += len(samples)
        if self.samples > self._max_samples:
            raise TranscriptionFailed(too_long(self.samples / SAMPLE_RATE, self._max_seconds))
        return samples


def quietest(samples: Any, first: int, last: int) -> int:
    """The middle of the quietest CUT_FRAME_SECONDS of samples[first:last] (by energy): where to cut."""
    import numpy as np

    frame = int(CUT_FRAME_SECONDS * SAMPLE_RATE)
    span = samples[first:last]
    count = len(span) // frame
    if count == 0:
        return last
    energy = np.square(span[: count * frame].reshape(count, frame)).sum(axis=1)
    return first + int(np.argmin(energy)) * frame + frame // 2


def onset(window: Any, start: float, end: float) -> float:
    """Where the last sound between `start` and `end` (seconds into `window`) begins, never before `start`:
    walking back from that stretch's last sound to the pause before it."""
    import numpy as np

    frame = int(ONSET_FRAME_SECONDS * SAMPLE_RATE)
    span = window[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]
    count = len(span) // frame
    if count < 2:
        return start
    loudness = np.sqrt(np.square(span[: count * frame].reshape(count, frame), dtype=np.float64).mean(axis=1))
    peak = float(loudness.max())
    if not peak > 0:
        return start
    sounding = loudness >= peak * ONSET_SHARE
    pause_frames = int(ONSET_PAUSE_SECONDS / ONSET_FRAME_SECONDS)
    onset = quiet = 0
    last_sound = count - 1 - int(np.argmax(sounding[::-1]))
    for index in range(last_sound, -1, -1):
        if sounding[index]:
            onset, quiet = index, 0
        else:
            quiet += 1
            if quiet >= pause_frames:
                break
    return start + onset * frame / SAMPLE_RATE
