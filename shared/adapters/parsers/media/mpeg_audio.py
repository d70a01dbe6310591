"""MP3 (and MPEG audio layers I and II): the ID3v2 tags skipped (their sizes checked against the file), the first
frame found where a second one follows it, and the duration from its Xing, Info or VBRI header; failing those, from
the average bitrate of the first frames and the bytes that follow them (a constant-bitrate estimate)."""

from shared.adapters.parsers.media.reading import Probed, Refused, Source, Stream, malformed, truncated, u32
from shared.domain.media import AUDIO_MPEG, MediaRefusalReason, spoken_bytes
from shared.domain.media_sniffing import ID3_HEADER_BYTES, MpegFrame, id3_tag_size, mpeg_frame

# Some files carry a tag more than once; past a few it is not a tag but a trap.
_MAX_ID3_TAGS = 4
# Where the first frame must start after the tags: padding and junk are seldom more than a few kilobytes.
_SYNC_WINDOW = 64 * 1024
# Frames whose bitrates are averaged for a file without a Xing or VBRI header.
_FRAMES_SAMPLED = 32
_ID3V1_BYTES = 128
# A Xing header's byte count may be off by a little (a tag counted or not); past this share, the file is cut.
_BYTES_SLACK = 0.02
_CODECS = {1: "mp1", 2: "mp2", 3: "mp3"}


def after_id3_tags(source: Source) -> int:
    """Where the audio starts: past every ID3v2 tag at the front, each one checked to end inside the file."""
    offset = 0
    for _ in range(_MAX_ID3_TAGS):
        header = source.read(offset, ID3_HEADER_BYTES)
        if not header.startswith(b"ID3"):
            return offset
        size = id3_tag_size(header)
        if size is None:
            raise malformed("the file's ID3 tag has a damaged header")
        if offset + size > source.size:
            raise truncated(
                f"the file's ID3 tag claims {spoken_bytes(size)} but the file holds {spoken_bytes(source.size)}"
            )
        offset += size
    return offset


def read_mpeg_audio(source: Source, start: int) -> Probed:
    window = source.read(start, _SYNC_WINDOW)
    found = _first_frame(window, start, source.size)
    if found is None:
        raise malformed("no MPEG audio frame follows the file's tags: it is not an MP3, or it is damaged")
    position, frame = found
    duration = _from_vbr_header(window, position, frame, source.size - (start + position))
    if duration is None:
        duration = _constant_bitrate_estimate(source, window, start, position)
    stream = Stream("audio", _CODECS[frame.layer], frame.channels, frame.sample_rate)
    return Probed("mp3", AUDIO_MPEG, duration, (stream,))


def _first_frame(window: bytes, start: int, size: int) -> tuple[int, MpegFrame] | None:
    """The first frame header whose successor is where its length says (or which ends the file)."""
    position = window.find(b"\xff")
    while position >= 0:
        frame = mpeg_frame(window[position : position + 4])
        if frame is not None:
            following = position + frame.length
            successor = mpeg_frame(window[following : following + 4])
            if successor is not None and frame.same_stream(successor):
                return position, frame
            if start + following <= size < start + following + 4:
                return position, frame  # a file of one frame (or one frame and a few stray bytes)
        position = window.find(b"\xff", position + 1)
    return None


def _from_vbr_header(window: bytes, position: int, frame: MpegFrame, held: int) -> float | None:
    """The duration a Xing/Info or VBRI header gives, the file checked against the bytes it counts."""
    at = position + 4 + frame.side_info_bytes
    frames = stream_bytes = None
    if window[at : at + 4] in (b"Xing", b"Info"):
        flags, field = u32(window, at + 4), at + 8
        if flags & 1:
            frames, field = u32(window, field), field + 4
        if flags & 2:
            stream_bytes = u32(window, field)
    elif window[position + 36 : position + 40] == b"VBRI":
        stream_bytes, frames = u32(window, position + 46), u32(window, position + 50)
    if stream_bytes and held < stream_bytes * (1 - _BYTES_SLACK):
        raise truncated(
            f"the MP3's header counts {spoken_bytes(stream_bytes)} of audio but the file holds {spoken_bytes(held)}"
        )
    if not frames:
        return None
    return frames * frame.samples / frame.sample_rate


def _constant_bitrate_estimate(source: Source, window: bytes, start: int, position: int) -> float:
    bitrates: list[int] = []
    at = position
    while len(bitrates) < _FRAMES_SAMPLED:
        source.tick("frames")
        frame = mpeg_frame(window[at : at + 4])
        if frame is None:
            break
        bitrates.append(frame.bitrate_kbps)
        at += frame.length
    if not bitrates:
        raise Refused(MediaRefusalReason.UNKNOWN_DURATION, "the MP3 gives no bitrate to tell its duration from")
    audio_bytes = source.size - (start + position)
    if source.size >= _ID3V1_BYTES and source.read(source.size - _ID3V1_BYTES, 3) == b"TAG":
        audio_bytes -= _ID3V1_BYTES
    return max(0, audio_bytes) * 8 / (sum(bitrates) / len(bitrates) * 1000)
