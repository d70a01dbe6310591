"""WebM and Matroska (EBML): the header's DocType, then the Segment's children up to its first Cluster: Info
(TimestampScale, Duration) and Tracks (each TrackEntry's type, codec, channels and sampling frequency), found through
the SeekHead when they come after the clusters. A live recording (a browser's MediaRecorder) has no Duration and
clusters of unknown size: its duration is the last cluster's timestamp plus its last block's, read from the tail.
Only the Segment and a Cluster may be of unknown size; every element counts against the element bound, and entering
one against the depth bound."""

from collections.abc import Iterator
from dataclasses import dataclass, field

from shared.adapters.parsers.media.reading import (
    Probed,
    Refused,
    Source,
    Stream,
    Streams,
    ebml_float,
    malformed,
    printable,
    truncated,
)
from shared.domain.media import AUDIO_WEBM, VIDEO_MATROSKA, VIDEO_WEBM, MediaRefusalReason
from shared.domain.media_sniffing import ebml_doc_type, ebml_number

_SEGMENT, _SEEK_HEAD, _SEEK, _SEEK_ID, _SEEK_POSITION = 0x18538067, 0x114D9B74, 0x4DBB, 0x53AB, 0x53AC
_INFO, _TIMESTAMP_SCALE, _DURATION = 0x1549A966, 0x2AD7B1, 0x4489
_TRACKS, _TRACK_ENTRY, _TRACK_TYPE, _CODEC_ID = 0x1654AE6B, 0xAE, 0x83, 0x86
_AUDIO, _SAMPLING_FREQUENCY, _CHANNELS = 0xE1, 0xB5, 0x9F
_CLUSTER, _TIMESTAMP, _SIMPLE_BLOCK, _BLOCK_GROUP, _BLOCK = 0x1F43B675, 0xE7, 0xA3, 0xA0, 0xA1
_CLUSTER_ID = _CLUSTER.to_bytes(4, "big")
_TOP_LEVEL = frozenset({_SEEK_HEAD, _INFO, _TRACKS, _CLUSTER, 0x1C53BB6B, 0x1254C367, 0x1043A770, 0x1941A469})
_VIDEO_TRACK, _AUDIO_TRACK = 1, 2
_MAX_EBML_HEADER = 1024
_MAX_CODEC_ID = 64
# The tail searched for a live recording's last cluster: an audio cluster is a few kilobytes to a few hundred.
_TAIL = 1024 * 1024
_CODECS = {
    "A_OPUS": "opus",
    "A_VORBIS": "vorbis",
    "A_FLAC": "flac",
    "A_MPEG/L3": "mp3",
    "A_AC3": "ac3",
    "A_EAC3": "eac3",
    "A_ALAC": "alac",
    "V_VP8": "vp8",
    "V_VP9": "vp9",
    "V_AV1": "av1",
    "V_MPEG4/ISO/AVC": "h264",
    "V_MPEGH/ISO/HEVC": "hevc",
    "V_THEORA": "theora",
    "V_MPEG4/ISO/ASP": "mpeg4",
    "V_MPEG4/ISO/SP": "mpeg4",
    "V_MPEG4/ISO/AP": "mpeg4",
}
# Codec IDs that name a family and then a variant: A_AAC/MPEG4/LC, A_PCM/INT/LIT.
_CODEC_FAMILIES = {"A_AAC": "aac", "A_PCM/": "pcm", "A_MS/ACM": "acm"}


@dataclass
class _Segment:
    data: int  # where its children start: SeekHead positions count from here
    end: int
    scale: int = 1_000_000
    duration: float | None = None
    info_seen: bool = False
    tracks: list[Stream] | None = None
    seeks: dict[int, int] = field(default_factory=dict)


def read_matroska(source: Source) -> Probed:
    elements = _elements(source, 0, source.size, "file")
    _, body, end = next(elements)
    doc_type = ebml_doc_type(source.read(body, min(_bounded(end, "EBML header") - body, _MAX_EBML_HEADER)))
    if doc_type not in (b"webm", b"matroska"):
        raise Refused(
            MediaRefusalReason.UNSUPPORTED, f"an EBML file of type '{printable(doc_type or b'')}' is not a recording"
        )
    segment = next((_Segment(body, end or source.size) for element, body, end in elements if element == _SEGMENT), None)
    if segment is None:
        raise malformed("the file has no Segment after its EBML header")
    depth = source.deeper(0)
    for element, body, end in _elements(source, segment.data, segment.end, "Segment"):
        if element == _CLUSTER and (end is None or (segment.info_seen and segment.tracks is not None)):
            break  # the clusters are the media: what comes before them is what is needed
        _child(source, segment, element, body, _bounded(end, "Segment child"), depth=depth)
    for element in (_INFO, _TRACKS):
        position = segment.seeks.get(element)
        needed = not segment.info_seen if element == _INFO else segment.tracks is None
        if needed and position is not None and segment.data + position < segment.end:
            found, body, end = next(_elements(source, segment.data + position, segment.end, "Segment"))
            if found == element:
                _child(source, segment, element, body, _bounded(end, "Segment child"), depth=depth)
    if segment.tracks is None:
        raise malformed("the file has no Tracks element")
    streams = Streams(source.limits.max_streams)
    for stream in segment.tracks:
        streams.add(stream)
    found_streams = tuple(streams.found)
    duration = segment.duration * segment.scale / 1e9 if segment.duration is not None else None
    if duration is None:
        duration = _tail_duration(source, segment)
    video = any(stream.kind == "video" for stream in found_streams)
    if doc_type == b"matroska":
        return Probed("matroska", VIDEO_MATROSKA, duration, found_streams)
    return Probed("webm", VIDEO_WEBM if video else AUDIO_WEBM, duration, found_streams)


def _bounded(end: int | None, what: str) -> int:
    if end is None:
        raise malformed(f"an element of unknown size where only a Segment or a Cluster may be one ({what})")
    return end


def _elements(source: Source, start: int, end: int, parent: str) -> Iterator[tuple[int, int, int | None]]:
    """(ID, where its body starts, where it ends: None for an unknown size) of each element in [start, end)."""
    position = start
    while position < end:
        source.tick("elements")
        header = source.read(position, 12)
        element = ebml_number(header, 0, keep_marker=True)
        size = ebml_number(header, element[1], keep_marker=False) if element and element[1] <= 4 else None
        if element is None or size is None:
            if len(header) < 12 and position + len(header) >= source.size and header[:1] != b"\x00":
                raise truncated("the file ends inside an element's header")
            raise malformed(f"an element inside the {parent} has a damaged header")
        body = position + element[1] + size[1]
        if size[0] < 0:
            yield element[0], body, None
            return  # what follows an unknown size is found by reading it, which only a cluster needs
        if body + size[0] > end:
            if end >= source.size:
                raise truncated(f"the file ends inside an element of the {parent}")
            raise malformed(f"an element's size points past the end of the {parent}")
        yield element[0], body, body + size[0]
        position = body + size[0]


def _child(source: Source, segment: _Segment, element: int, body: int, end: int, *, depth: int) -> None:
    if element == _INFO:
        segment.info_seen = True
        for inner, inner_body, inner_end in _elements(source, body, end, "Info"):
            value = source.read(inner_body, min(_bounded(inner_end, "Info") - inner_body, 8))
            if inner == _TIMESTAMP_SCALE:
                segment.scale = int.from_bytes(value, "big")
            elif inner == _DURATION:
                segment.duration = ebml_float(value)
    elif element == _TRACKS and segment.tracks is None:
        segment.tracks = []
        for inner, inner_body, inner_end in _elements(source, body, end, "Tracks"):
            if inner == _TRACK_ENTRY:
                track = _track(source, inner_body, _bounded(inner_end, "Tracks"), source.deeper(depth))
                if track is not None:
                    segment.tracks.append(track)
    elif element == _SEEK_HEAD:
        for inner, inner_body, inner_end in _elements(source, body, end, "SeekHead"):
            if inner == _SEEK:
                _seek(source, segment, inner_body, _bounded(inner_end, "SeekHead"))


def _seek(source: Source, segment: _Segment, body: int, end: int) -> None:
    fields: dict[int, int] = {}
    for inner, inner_body, inner_end in _elements(source, body, end, "Seek"):
        if inner in (_SEEK_ID, _SEEK_POSITION):
            fields[inner] = int.from_bytes(source.read(inner_body, min(_bounded(inner_end, "Seek") - inner_body, 8)))
    if _SEEK_ID in fields and _SEEK_POSITION in fields:
        segment.seeks.setdefault(fields[_SEEK_ID], fields[_SEEK_POSITION])


def _track(source: Source, body: int, end: int, depth: int) -> Stream | None:
    kind, codec, channels, rate = 0, "", 1, 8000.0  # Matroska's defaults for an audio track
    for inner, inner_body, inner_end in _elements(source, body, end, "TrackEntry"):
        length = _bounded(inner_end, "TrackEntry") - inner_body
        if inner == _TRACK_TYPE:
            kind = int.from_bytes(source.read(inner_body, min(length, 8)))
        elif inner == _CODEC_ID:
            codec = source.read(inner_body, min(length, _MAX_CODEC_ID)).rstrip(b"\x00").decode("ascii", "replace")
        elif inner == _AUDIO:
            source.deeper(depth)
            for field_id, field_body, field_end in _elements(source, inner_body, inner_body + length, "Audio"):
                value = source.read(field_body, min(_bounded(field_end, "Audio") - field_body, 8))
                if field_id == _CHANNELS:
                    channels = int.from_bytes(value)
                elif field_id == _SAMPLING_FREQUENCY:
                    rate = ebml_float(value) or 0.0
    family = next((name for prefix, name in _CODEC_FAMILIES.items() if codec.startswith(prefix)), None)
    name = _CODECS.get(codec) or family or (codec.lower() or None)
    if kind == _VIDEO_TRACK:
        return Stream("video", name)
    if kind == _AUDIO_TRACK:
        return Stream("audio", name, channels, round(rate) if 0 < rate < 1e7 else 0)
    return None  # subtitles, buttons, metadata


def _tail_duration(source: Source, segment: _Segment) -> float | None:
    """A live recording's duration: its last cluster's timestamp and the latest block in it."""
    start = max(segment.data, segment.end - _TAIL)
    tail = source.read(start, segment.end - start)
    position = tail.rfind(_CLUSTER_ID)
    while position >= 0:
        source.tick("elements")
        latest = _cluster_latest(source, tail, position)
        if latest is not None:
            return latest * segment.scale / 1e9
        position = tail.rfind(_CLUSTER_ID, 0, position)
    return None


def _cluster_latest(source: Source, tail: bytes, position: int) -> int | None:
    """The cluster's timestamp plus its latest block's, in the segment's units; None unless it has both."""
    size = ebml_number(tail, position + 4, keep_marker=False)
    if size is None:
        return None
    body = position + 4 + size[1]
    end = len(tail) if size[0] < 0 else min(len(tail), body + size[0])
    cluster_time: int | None = None
    latest: int | None = None
    while body < end:
        source.tick("elements")
        element = ebml_number(tail, body, keep_marker=True)
        length = ebml_number(tail, body + element[1], keep_marker=False) if element else None
        if element is None or length is None or length[0] < 0 or element[0] in _TOP_LEVEL:
            break
        inner = body + element[1] + length[1]
        if element[0] == _TIMESTAMP and cluster_time is None:
            cluster_time = int.from_bytes(tail[inner : inner + min(length[0], 8)])
        elif element[0] in (_SIMPLE_BLOCK, _BLOCK_GROUP):
            relative = _block_time(tail, inner, element[0] == _BLOCK_GROUP)
            if relative is not None:
                latest = relative if latest is None else max(latest, relative)
        body = inner + length[0]
    if cluster_time is None or latest is None:
        return None
    return max(0, cluster_time + latest)


def _block_time(tail: bytes, body: int, grouped: bool) -> int | None:
    """A block's timestamp relative to its cluster: a signed 16-bit number after the track number."""
    if grouped:  # a BlockGroup's Block is its first child, in practice
        element = ebml_number(tail, body, keep_marker=True)
        length = ebml_number(tail, body + element[1], keep_marker=False) if element else None
        if element is None or length is None or element[0] != _BLOCK:
            return None
        body += element[1] + length[1]
    track = ebml_number(tail, body, keep_marker=False)
    if track is None or body + track[1] + 2 > len(tail):
        return None
    return int.from_bytes(tail[body + track[1] : body + track[1] + 2], "big", signed=True)
