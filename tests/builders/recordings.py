"""Recordings written by FFmpeg through PyAV (the `dev` extra): a sine tone, and for video a small moving picture,
muxed into the container asked for. Real encoders and muxers, so that the probe is tested on what tools write."""

import io
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer
    from av import AudioFrame, VideoFrame

TONE_HERTZ = 440.0


@dataclass(frozen=True)
class Recording:
    """What to write: a container (FFmpeg's muxer name), an audio codec or none, a video codec or none. A streamed
    recording is written to a pipe that cannot seek, as a browser's MediaRecorder or `ffmpeg ... -` writes: the
    muxer cannot go back to fill in sizes and durations."""

    name: str
    muxer: str
    suffix: str
    audio: str | None
    video: str | None = None
    seconds: float = 2.0
    rate: int = 48_000
    channels: int = 2
    streamed: bool = False
    muxer_options: dict[str, str] = field(default_factory=dict)
    codec_options: dict[str, str] = field(default_factory=dict)


class _Pipe(io.RawIOBase):
    """A write-only stream that cannot seek."""

    def __init__(self) -> None:
        self.written = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: "ReadableBuffer") -> int:
        chunk = bytes(data)
        self.written += chunk
        return len(chunk)


def write_recording(recording: Recording, folder: Path) -> Path:
    import av

    path = folder / f"{recording.name}.{recording.suffix}"
    pipe = _Pipe()
    target: str | _Pipe = pipe if recording.streamed else str(path)
    with av.open(target, "w", format=recording.muxer, options=recording.muxer_options) as container:
        # Every stream is added before the first packet is muxed: that writes the header.
        audio: av.AudioStream | None = None
        video: av.VideoStream | None = None
        if recording.audio is not None:
            layout = "mono" if recording.channels == 1 else "stereo"
            added = container.add_stream(recording.audio, rate=recording.rate, layout=layout)
            assert isinstance(added, av.AudioStream)
            audio = added
            audio.codec_context.options = dict(recording.codec_options)
        if recording.video is not None:
            picked = container.add_stream(recording.video, rate=10)
            assert isinstance(picked, av.VideoStream)
            video = picked
            video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        if audio is not None:
            for sound in [*_tone(recording), None]:
                container.mux(audio.encode(sound))
        if video is not None:
            for picture in [*_pictures(recording), None]:
                container.mux(video.encode(picture))
    if recording.streamed:
        path.write_bytes(bytes(pipe.written))
    return path


def _tone(recording: Recording) -> "list[AudioFrame]":
    import av

    layout = "mono" if recording.channels == 1 else "stereo"
    per_frame = 1024
    total = round(recording.seconds * recording.rate)
    frames: list[AudioFrame] = []
    for start in range(0, total, per_frame):
        count = min(per_frame, total - start)
        samples = (
            int(12_000 * math.sin(2 * math.pi * TONE_HERTZ * (start + i) / recording.rate))
            for i in range(count)
            for _ in range(recording.channels)
        )
        frame = av.AudioFrame(format="s16", layout=layout, samples=count)
        frame.planes[0].update(struct.pack(f"<{count * recording.channels}h", *samples))
        frame.sample_rate, frame.pts = recording.rate, start
        frames.append(frame)
    return frames


def _pictures(recording: Recording) -> "list[VideoFrame]":
    import av

    frames: list[VideoFrame] = []
    for index in range(round(recording.seconds * 10)):
        frame = av.VideoFrame(64, 48, "yuv420p")
        luma = bytes((index * 8 + x) % 256 for _ in range(48) for x in range(64))
        for plane, content in zip(frame.planes, (luma, bytes(32 * 24), bytes(32 * 24)), strict=True):
            plane.update(content.ljust(plane.buffer_size, b"\x80")[: plane.buffer_size])
        frame.pts = index
        frames.append(frame)
    return frames
