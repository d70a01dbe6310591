"""Ogg: the first page of every logical stream (they all come first) says its codec (Opus, Vorbis, FLAC, Speex;
Theora is video); the duration is the granule position of the audio stream's last page, found in the file's tail
(two of Ogg's largest pages), the page checked to end where the file or the next page begins."""

from shared.adapters.parsers.media.flac import STREAMINFO_BYTES, stream_info
from shared.adapters.parsers.media.reading import (
    Probed,
    Refused,
    Source,
    Stream,
    Streams,
    malformed,
    truncated,
    u16,
    u32,
    u64,
)
from shared.domain.media import AUDIO_OGG, MediaRefusalReason

_PAGE_HEADER = 27
_MAX_PAGE = _PAGE_HEADER + 255 + 255 * 255
_TAIL = 2 * _MAX_PAGE
_FIRST_PAGE = 0x02
# A granule position is signed: -1 (all ones) says no packet ends on the page, and no real one is negative.
_NEGATIVE = 1 << 63
_OPUS_RATE = 48_000
# Enough of an identification packet for every field read below (FLAC's STREAMINFO ends at byte 51).
_ID_PACKET_BYTES = 64


def read_ogg(source: Source) -> Probed:
    streams = Streams(source.limits.max_streams)
    audio: dict[int, tuple[int, int]] = {}  # serial → (granules per second, granules to skip)
    offset = 0
    while True:
        source.tick("pages")
        header = source.read(offset, _PAGE_HEADER)
        if header.startswith(b"OggS") and len(header) < _PAGE_HEADER:
            raise truncated("the file ends inside an Ogg page")
        if not header.startswith(b"OggS") or not header[5] & _FIRST_PAGE:
            if offset == 0:
                raise malformed("the file has no Ogg page a stream begins with")
            break
        if header[4] != 0:
            raise malformed(f"the Ogg page's version is {header[4]}; Ogg has only version 0")
        lacing = source.exact(offset + _PAGE_HEADER, header[26], "Ogg page")
        packet = source.read(offset + _PAGE_HEADER + len(lacing), _ID_PACKET_BYTES)
        _identify(packet, u32(header, 14, "little"), streams, audio)
        offset += _PAGE_HEADER + len(lacing) + sum(lacing)
        if offset > source.size:
            raise truncated("the file ends inside an Ogg page")
    found = tuple(streams.found)
    if any(stream.kind == "video" for stream in found):
        raise Refused(
            MediaRefusalReason.UNSUPPORTED,
            "the Ogg file holds video (Theora), which Quire does not read: convert it to MP4 or WebM",
        )
    if not audio:
        raise Refused(
            MediaRefusalReason.UNSUPPORTED,
            "the Ogg file holds no stream Quire reads (Opus, Vorbis, FLAC or Speex)",
        )
    serial = next(iter(audio))
    rate, skipped = audio[serial]
    granule = _last_granule(source, serial, offset)
    duration = None if granule is None or not rate else max(0, granule - skipped) / rate
    return Probed("ogg", AUDIO_OGG, duration, found)


def _identify(packet: bytes, serial: int, streams: Streams, audio: dict[int, tuple[int, int]]) -> None:
    """A stream's identification packet: its codec, channels and rate (and Opus's pre-skip)."""
    if packet.startswith(b"OpusHead") and len(packet) >= 19:
        streams.add(Stream("audio", "opus", packet[9], _OPUS_RATE))
        audio.setdefault(serial, (_OPUS_RATE, u16(packet, 10, "little")))
    elif packet.startswith(b"\x01vorbis") and len(packet) >= 16:
        rate = u32(packet, 12, "little")
        streams.add(Stream("audio", "vorbis", packet[11], rate))
        audio.setdefault(serial, (rate, 0))
    elif packet.startswith(b"\x7fFLAC") and packet[9:13] == b"fLaC" and len(packet) >= 17 + STREAMINFO_BYTES:
        info = stream_info(packet[17 : 17 + STREAMINFO_BYTES])
        streams.add(Stream("audio", "flac", info.channels, info.sample_rate))
        audio.setdefault(serial, (info.sample_rate, 0))
    elif packet.startswith(b"Speex   ") and len(packet) >= 52:
        rate = u32(packet, 36, "little")
        streams.add(Stream("audio", "speex", u32(packet, 48, "little"), rate))
        audio.setdefault(serial, (rate, 0))
    elif packet.startswith(b"\x80theora"):
        streams.add(Stream("video", "theora"))
    # Anything else (a Skeleton index, a subtitle stream) is neither audio nor video.


def _last_granule(source: Source, serial: int, headers_end: int) -> int | None:
    """The granule position of the stream's last whole page in the tail, or None when the tail holds none."""
    start = max(headers_end, source.size - _TAIL)
    tail = source.read(start, source.size - start)
    position = tail.rfind(b"OggS")
    while position >= 0:
        source.tick("pages")
        header = tail[position : position + _PAGE_HEADER]
        if len(header) == _PAGE_HEADER and u32(header, 14, "little") == serial:
            lacing = tail[position + _PAGE_HEADER : position + _PAGE_HEADER + header[26]]
            end = position + _PAGE_HEADER + len(lacing) + sum(lacing)
            whole = len(lacing) == header[26] and (end == len(tail) or tail[end : end + 4] == b"OggS")
            granule = u64(header, 6, "little")
            if whole and granule < _NEGATIVE:
                return granule
        position = tail.rfind(b"OggS", 0, position)
    return None
