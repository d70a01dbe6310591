"""Which recording the first bytes are, from the bytes alone: `sniff_media_type(head)`.

A guess from a prefix (the first 8 KB is plenty): an MP4 whose brand does not say audio or video, and a WebM whose
tracks lie past the prefix, are sniffed as video; the probe, which reads the tracks, refines the type. What is
decoded here (an MPEG audio frame header, an ISO brand, an EBML number) the probe uses too.
"""

from dataclasses import dataclass

from shared.domain.media import (
    AUDIO_FLAC,
    AUDIO_MP4,
    AUDIO_MPEG,
    AUDIO_OGG,
    AUDIO_WAV,
    AUDIO_WEBM,
    VIDEO_MATROSKA,
    VIDEO_MP4,
    VIDEO_QUICKTIME,
    VIDEO_WEBM,
)

ID3_HEADER_BYTES = 10
# Brands that say what an ISO file holds; any other brand of the family is an MP4 that may hold either.
_AUDIO_BRANDS = frozenset({b"M4A ", b"M4B ", b"M4P ", b"F4A ", b"F4B "})
_QUICKTIME_BRANDS = frozenset({b"qt  "})
_ISO_BRANDS = frozenset(
    {b"isom", b"iso2", b"iso3", b"iso4", b"iso5", b"iso6", b"iso8", b"iso9", b"mp41", b"mp42", b"mp71", b"avc1"}
    | {b"dash", b"M4V ", b"M4VH", b"M4VP", b"F4V ", b"F4P ", b"MSNV", b"NDAS", b"3gp4", b"3gp5", b"3gp6", b"3g2a"}
    | {b"mmp4", b"XAVC", b"hvc1", b"heix", b"cmfc", b"cmfs"}
)
# A QuickTime file from before brands began with one of these atoms.
QUICKTIME_FIRST_ATOMS = frozenset({b"moov", b"mdat", b"wide", b"free", b"skip", b"pnot"})
EBML_MAGIC = b"\x1a\x45\xdf\xa3"
_TRACKS_ID = b"\x16\x54\xae\x6b"
_VIDEO_TRACK_TYPE = b"\x83\x81\x01"  # TrackType (0x83), one byte long, 1: video
_OGG_AUDIO_HEADS = (b"OpusHead", b"\x01vorbis", b"\x7fFLAC", b"Speex   ", b"fishead\x00")


def sniff_media_type(head: bytes) -> str | None:
    """The recording type of a file that starts with `head`, or None when it is none of them."""
    for sniff in (_wav, _flac, _ogg, _ebml_type, _iso, _id3, _mpeg):
        media_type = sniff(head)
        if media_type is not None:
            return media_type
    return None


def _wav(head: bytes) -> str | None:
    return AUDIO_WAV if head[:4] in (b"RIFF", b"RIFX", b"RF64") and head[8:12] == b"WAVE" else None


def _flac(head: bytes) -> str | None:
    return AUDIO_FLAC if head.startswith(b"fLaC") else None


def _ogg(head: bytes) -> str | None:
    return AUDIO_OGG if head.startswith(b"OggS") and _first_ogg_packet(head).startswith(_OGG_AUDIO_HEADS) else None


def _iso(head: bytes) -> str | None:
    if head[4:8] == b"ftyp":
        return iso_type(iso_brands(head[8 : min(len(head), int.from_bytes(head[:4], "big"))]))
    if head[4:8] in QUICKTIME_FIRST_ATOMS and _box_size_is_possible(int.from_bytes(head[:4], "big")):
        return VIDEO_QUICKTIME
    return None


def _id3(head: bytes) -> str | None:
    size = id3_tag_size(head)
    if size is None:
        return None
    # A tag longer than the prefix hides what follows it: MP3 is what a tag most often precedes.
    return AUDIO_FLAC if head[size : size + 4] == b"fLaC" else AUDIO_MPEG


def _mpeg(head: bytes) -> str | None:
    return AUDIO_MPEG if _mpeg_frames_chain(head) else None


def _box_size_is_possible(size: int) -> bool:
    return size in (0, 1) or size >= 8


def iso_brands(ftyp_body: bytes) -> tuple[bytes, ...]:
    """The major brand, then the compatible ones (the minor version between them skipped)."""
    if len(ftyp_body) < 4:
        return ()
    compatible = ftyp_body[8:]
    return (ftyp_body[:4], *(compatible[i : i + 4] for i in range(0, len(compatible) - 3, 4)))


def iso_type(brands: tuple[bytes, ...]) -> str | None:
    """What an ftyp's brands say: the major brand decides when it is one this knows, else the first compatible."""
    for brand in brands:
        if brand in _AUDIO_BRANDS:
            return AUDIO_MP4
        if brand in _QUICKTIME_BRANDS:
            return VIDEO_QUICKTIME
        if brand in _ISO_BRANDS:
            return VIDEO_MP4
    return None


def id3_tag_size(head: bytes) -> int | None:
    """The bytes an ID3v2 tag at the start of `head` takes (its header and footer included), or None."""
    if len(head) < ID3_HEADER_BYTES or not head.startswith(b"ID3") or head[3] not in (2, 3, 4) or head[4] == 0xFF:
        return None
    size_bytes = head[6:10]
    if any(byte & 0x80 for byte in size_bytes):
        return None  # a synchsafe size never sets a byte's top bit
    size = 0
    for byte in size_bytes:
        size = (size << 7) | byte
    footer = ID3_HEADER_BYTES if head[3] == 4 and head[5] & 0x10 else 0
    return ID3_HEADER_BYTES + size + footer


@dataclass(frozen=True)
class MpegFrame:
    """One MPEG audio frame header (layers I to III, MPEG 1, 2 and 2.5)."""

    version: int  # 1, 2 or 25 (MPEG 2.5)
    layer: int
    bitrate_kbps: int
    sample_rate: int
    padding: int
    channels: int

    @property
    def samples(self) -> int:
        if self.layer == 1:
            return 384
        return 1152 if self.layer == 2 or self.version == 1 else 576

    @property
    def length(self) -> int:
        if self.layer == 1:
            return (12 * self.bitrate_kbps * 1000 // self.sample_rate + self.padding) * 4
        return self.samples // 8 * self.bitrate_kbps * 1000 // self.sample_rate + self.padding

    @property
    def side_info_bytes(self) -> int:
        if self.version == 1:
            return 17 if self.channels == 1 else 32
        return 9 if self.channels == 1 else 17

    def same_stream(self, other: "MpegFrame") -> bool:
        return (self.version, self.layer, self.sample_rate) == (other.version, other.layer, other.sample_rate)


_BITRATES = {
    (1, 1): (0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
    (1, 2): (0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (1, 3): (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (2, 1): (0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
    (2, 2): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    (2, 3): (0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
_SAMPLE_RATES = {1: (44_100, 48_000, 32_000), 2: (22_050, 24_000, 16_000), 25: (11_025, 12_000, 8_000)}
_VERSIONS = {0: 25, 2: 2, 3: 1}  # 1 is reserved


def mpeg_frame(header: bytes) -> MpegFrame | None:
    """The frame header in the first four bytes, or None (a free-format bitrate counts as none: its frames have no
    length a header gives)."""
    if len(header) < 4 or header[0] != 0xFF or header[1] & 0xE0 != 0xE0:
        return None
    version = _VERSIONS.get((header[1] >> 3) & 3)
    layer = 4 - ((header[1] >> 1) & 3)
    bitrate_index, rate_index = header[2] >> 4, (header[2] >> 2) & 3
    if version is None or layer == 4 or bitrate_index in (0, 15) or rate_index == 3 or header[3] & 3 == 2:
        return None
    bitrate = _BITRATES[(1 if version == 1 else 2, layer)][bitrate_index]
    channels = 1 if header[3] >> 6 == 3 else 2
    return MpegFrame(version, layer, bitrate, _SAMPLE_RATES[version][rate_index], (header[2] >> 1) & 1, channels)


def _mpeg_frames_chain(head: bytes) -> bool:
    """A frame at the start, and the next one where its length says (when the prefix reaches it)."""
    first = mpeg_frame(head[:4])
    if first is None:
        return False
    following = head[first.length : first.length + 4]
    if len(following) < 4:
        return len(head) < first.length + 4 and first.layer == 3
    second = mpeg_frame(following)
    return second is not None and first.same_stream(second)


def _first_ogg_packet(head: bytes) -> bytes:
    segments = head[26] if len(head) > 26 else 0
    start = 27 + segments
    return head[start : start + 8]


def ebml_number(data: bytes, offset: int, *, keep_marker: bool) -> tuple[int, int] | None:
    """An EBML variable-length number at `offset`: (value, length), the length marker kept for an element ID and
    dropped for a size (all ones then means unknown: -1). None when the bytes run out or no marker is set."""
    if offset >= len(data) or data[offset] == 0:
        return None
    first = data[offset]
    length = 9 - first.bit_length()
    if offset + length > len(data):
        return None
    value = first if keep_marker else first & (0xFF >> length)
    for byte in data[offset + 1 : offset + length]:
        value = (value << 8) | byte
    if not keep_marker and value == (1 << (7 * length)) - 1:
        return -1, length
    return value, length


def ebml_doc_type(header_body: bytes) -> bytes | None:
    """The DocType among the EBML header's children (a flat list of small elements)."""
    offset = 0
    while offset < len(header_body):
        element = ebml_number(header_body, offset, keep_marker=True)
        size = ebml_number(header_body, offset + element[1], keep_marker=False) if element else None
        if element is None or size is None or size[0] < 0:
            return None
        start = offset + element[1] + size[1]
        if element[0] == 0x4282:
            return header_body[start : start + size[0]].rstrip(b"\x00")
        offset = start + size[0]
    return None


def _ebml_type(head: bytes) -> str | None:
    if not head.startswith(EBML_MAGIC):
        return None
    size = ebml_number(head, 4, keep_marker=False)
    if size is None or size[0] < 0:
        return None
    start = 4 + size[1]
    doc_type = ebml_doc_type(head[start : start + size[0]])
    if doc_type == b"matroska":
        return VIDEO_MATROSKA
    if doc_type != b"webm":
        return None
    tracks = head.find(_TRACKS_ID, start + size[0])
    tracks_size = ebml_number(head, tracks + 4, keep_marker=False) if tracks >= 0 else None
    if tracks_size is None or tracks_size[0] < 0:
        return VIDEO_WEBM  # the tracks lie past the prefix: the probe tells
    body = tracks + 4 + tracks_size[1]
    return VIDEO_WEBM if _VIDEO_TRACK_TYPE in head[body : body + tracks_size[0]] else AUDIO_WEBM
