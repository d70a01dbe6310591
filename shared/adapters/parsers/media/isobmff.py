"""MP4, M4A and QuickTime (ISO base media): a walk of the boxes. The top level is walked until the movie box (moov)
has been read and a media data box (mdat) has been seen to end inside the file, whichever comes first, so that a
movie box at the end of the file is found by seeking past the media. Inside moov only the boxes on the way to what
is read are entered: mvhd (duration, timescale), each trak's hdlr (sound or video), mdhd and the first sample entry
of stsd (codec, channels, sample rate). A box shorter than its header, of size 0 inside another, or running past its
parent is refused; every box counts against the element bound, and entering one against the depth bound."""

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

from shared.adapters.parsers.media.reading import (
    Probed,
    Source,
    Stream,
    Streams,
    malformed,
    printable,
    truncated,
    u16,
    u32,
    u64,
)
from shared.domain.media import AUDIO_MP4, VIDEO_MP4, VIDEO_QUICKTIME
from shared.domain.media_sniffing import iso_brands, iso_type

# A sample entry read whole, up to this (its codec configuration boxes included; the rest is never needed).
_MAX_SAMPLE_ENTRY = 4096
_MAX_FTYP = 8 + 4 * 64
_UNKNOWN_32, _UNKNOWN_64 = (1 << 32) - 1, (1 << 64) - 1
_AUDIO_CODECS = {
    b"mp4a": "aac",
    b"Opus": "opus",
    b"fLaC": "flac",
    b"alac": "alac",
    b"ac-3": "ac3",
    b"ec-3": "eac3",
    b"samr": "amr_nb",
    b"sawb": "amr_wb",
    b".mp3": "mp3",
    b"ulaw": "pcm_mulaw",
    b"alaw": "pcm_alaw",
    b"sowt": "pcm_s16le",
    b"twos": "pcm_s16be",
    b"lpcm": "pcm",
    b"in24": "pcm_s24",
    b"in32": "pcm_s32",
    b"fl32": "pcm_f32",
    b"fl64": "pcm_f64",
    b"ipcm": "pcm",
    b"fpcm": "pcm_float",
}
_VIDEO_CODECS = {
    b"avc1": "h264",
    b"avc3": "h264",
    b"hvc1": "hevc",
    b"hev1": "hevc",
    b"vp08": "vp8",
    b"vp09": "vp9",
    b"av01": "av1",
    b"mp4v": "mpeg4",
    b"jpeg": "mjpeg",
    b"mjpa": "mjpeg",
    b"apch": "prores",
    b"apcn": "prores",
    b"apcs": "prores",
    b"apco": "prores",
    b"ap4h": "prores",
}
# MPEG-4 object types an mp4a entry may carry that are not AAC.
_OBJECT_TYPES = {0x69: "mp3", 0x6B: "mp3", 0xA9: "dts"}


@dataclass
class _Track:
    handler: bytes = b""
    timescale: int = 0
    duration: int = 0
    entry: bytes = b""


@dataclass
class _Movie:
    timescale: int = 0
    duration: int = 0
    fragments_duration: int = 0
    tracks: list[_Track] = field(default_factory=list)


def read_iso(source: Source) -> Probed:
    movie: _Movie | None = None
    brands: tuple[bytes, ...] | None = None
    media_seen = False
    for kind, body, end in _boxes(source, 0, source.size, None):
        if kind == b"ftyp" and brands is None:
            brands = iso_brands(source.read(body, min(end - body, _MAX_FTYP)))
        elif kind == b"moov" and movie is None:
            movie = _Movie()
            _movie(source, body, end, source.deeper(0), movie)
        elif kind == b"mdat":
            media_seen = True
        if movie is not None and media_seen:
            break
    if movie is None:
        raise malformed("the file has no movie box ('moov', its index): it was not finished, or is not an MP4")
    streams = Streams(source.limits.max_streams)
    for track in movie.tracks:
        if track.handler in (b"soun", b"vide"):
            streams.add(_stream(track))
    found = tuple(streams.found)
    quicktime = brands is None or iso_type(brands) == VIDEO_QUICKTIME
    media_type = VIDEO_QUICKTIME if quicktime else (VIDEO_MP4 if _has_video(found) else AUDIO_MP4)
    return Probed("mov" if quicktime else "mp4", media_type, _duration(movie), found)


def _has_video(streams: tuple[Stream, ...]) -> bool:
    return any(stream.kind == "video" for stream in streams)


def _boxes(source: Source, start: int, end: int, parent: bytes | None) -> Iterator[tuple[bytes, int, int]]:
    """(type, where its body starts, where it ends) of each box between start and end."""
    position = start
    while end - position >= 8:  # fewer stray bytes (QuickTime ends some lists with a zero word) are no box
        source.tick("boxes")
        header = source.exact(position, 8, "box header")
        size, kind, header_size = u32(header, 0), header[4:8], 8
        if size == 1:
            size, header_size = u64(source.exact(position + 8, 8, "box header"), 0), 16
        elif size == 0:
            if parent is not None:
                raise malformed(f"the '{printable(kind)}' box inside '{printable(parent)}' has size 0")
            size = source.size - position  # the last box of a file may run to its end
        if size < header_size:
            raise malformed(f"the '{printable(kind)}' box's size ({size}) is smaller than its own header")
        if position + size > end:
            if parent is None:
                raise truncated(f"the file ends inside its '{printable(kind)}' box")
            raise malformed(f"the '{printable(kind)}' box's size points past the end of '{printable(parent)}'")
        yield kind, position + header_size, position + size
        position += size


def _movie(source: Source, start: int, end: int, depth: int, movie: _Movie) -> None:
    for kind, body, box_end in _boxes(source, start, end, b"moov"):
        if kind == b"mvhd":
            movie.timescale, movie.duration = _time_header(source.read(body, min(box_end - body, 32)))
        elif kind == b"trak":
            track = _Track()
            _track(source, body, box_end, depth=source.deeper(depth), track=track, parent=kind)
            movie.tracks.append(track)
        elif kind == b"mvex":
            for inner, inner_body, inner_end in _boxes(source, body, box_end, kind):
                if inner == b"mehd":
                    header = source.read(inner_body, min(inner_end - inner_body, 12))
                    movie.fragments_duration = u64(header, 4) if header[:1] == b"\x01" else u32(header, 4)


def _track(source: Source, start: int, end: int, *, depth: int, track: _Track, parent: bytes) -> None:
    """trak → mdia → (mdhd, hdlr, minf → stbl → stsd), entered only on that path. The media's handler is mdia's
    hdlr: a QuickTime minf has one of its own, for the data reference ('alis')."""
    for kind, body, box_end in _boxes(source, start, end, parent):
        if kind in (b"mdia", b"minf", b"stbl"):
            _track(source, body, box_end, depth=source.deeper(depth), track=track, parent=kind)
        elif kind == b"mdhd":
            track.timescale, track.duration = _time_header(source.read(body, min(box_end - body, 32)))
        elif kind == b"hdlr" and parent == b"mdia":
            track.handler = source.read(body, min(box_end - body, 12))[8:12]
        elif kind == b"stsd" and not track.entry:
            entries = source.read(body, 16)
            if len(entries) >= 16 and u32(entries, 4) >= 1:
                entry_size = u32(entries, 8)
                if entry_size < 16 or body + 8 + entry_size > box_end:
                    raise malformed("the sample description's first entry runs past its box")
                track.entry = source.read(body + 8, min(entry_size, _MAX_SAMPLE_ENTRY))


def _time_header(header: bytes) -> tuple[int, int]:
    """(timescale, duration) of an mvhd or mdhd: 32-bit fields in version 0, 64-bit times in version 1."""
    if header[:1] == b"\x01":
        return u32(header, 20), (_duration_or_zero(u64(header, 24), _UNKNOWN_64))
    return u32(header, 12), _duration_or_zero(u32(header, 16), _UNKNOWN_32)


def _duration_or_zero(value: int, unknown: int) -> int:
    return 0 if value == unknown else value


def _duration(movie: _Movie) -> float | None:
    if movie.timescale and (movie.duration or movie.fragments_duration):
        return (movie.duration or movie.fragments_duration) / movie.timescale
    spans = [track.duration / track.timescale for track in movie.tracks if track.timescale and track.duration]
    return max(spans) if spans else None


def _stream(track: _Track) -> Stream:
    entry, fourcc = track.entry, track.entry[4:8]
    if track.handler == b"vide":
        return Stream("video", _VIDEO_CODECS.get(fourcc, printable(fourcc).strip() or None))
    codec = _AUDIO_CODECS.get(fourcc, printable(fourcc).strip() or None)
    if len(entry) < 36:
        return Stream("audio", codec, 0, track.timescale)
    version, channels, rate, children = u16(entry, 16), u16(entry, 24), u32(entry, 32) >> 16, 36
    if version == 1:
        children = 52
    elif version == 2 and len(entry) >= 72:
        rate, channels, children = round(struct.unpack(">d", entry[40:48])[0]), u32(entry, 48), 72
    if fourcc == b"mp4a":
        codec = _OBJECT_TYPES.get(_object_type(entry[children:]), codec)
    # A 16.16 field cannot say more than 65,535 Hz: past it a writer leaves 0 or another rate there (FFmpeg: 48,000
    # for 96,000), and the track's timescale, which writers set to the sample rate, is the rate.
    return Stream("audio", codec, channels, track.timescale if track.timescale > 0xFFFF or not rate else rate)


def _object_type(children: bytes) -> int:
    """The objectTypeIndication in an esds box among an mp4a entry's children (0 when there is none)."""
    position = 0
    while position + 8 <= len(children):
        size = u32(children, position)
        if children[position + 4 : position + 8] == b"esds":
            return _descriptor_object_type(children[position + 12 : position + size])
        if size < 8:
            return 0
        position += size
    return 0


def _descriptor_object_type(descriptors: bytes) -> int:
    """ES_Descriptor (tag 3) → DecoderConfigDescriptor (tag 4) → its first byte."""
    position = 0
    for expected in (3, 4):
        if position >= len(descriptors) or descriptors[position] != expected:
            return 0
        position += 1
        for _ in range(4):  # a size is at most four bytes, seven bits each
            if position >= len(descriptors):
                return 0
            position += 1
            if not descriptors[position - 1] & 0x80:
                break
        if expected == 3:
            flags = descriptors[position + 2] if position + 2 < len(descriptors) else 0
            position += 3 + (2 if flags & 0x80 else 0)  # ES_ID, the flags, dependsOn_ES_ID
            if flags & 0x40:  # a URL, its length first
                position += 1 + (descriptors[position] if position < len(descriptors) else 0)
            position += 2 if flags & 0x20 else 0  # OCR_ES_Id
    return descriptors[position] if position < len(descriptors) else 0
