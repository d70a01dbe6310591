"""WAV: RIFF (little-endian), RIFX (big-endian) and RF64 (its sizes in a ds64 chunk). The chunk list up to the
data chunk: fmt says the format, data how many bytes of samples; the samples themselves are never read."""

from typing import Literal

from shared.adapters.parsers.media.reading import (
    Probed,
    Refused,
    Source,
    Stream,
    malformed,
    printable,
    truncated,
    u16,
    u32,
    u64,
)
from shared.domain.media import AUDIO_WAV, MediaRefusalReason, spoken_bytes

_NOT_RECORDED = 0xFFFFFFFF
# Formats whose every block is `channels` samples of `bits` each: their duration is their data size.
_LINEAR = {1: "pcm", 3: "pcm_float", 6: "pcm_alaw", 7: "pcm_mulaw"}
_COMPRESSED = {2: "adpcm_ms", 0x11: "adpcm_ima_wav", 0x31: "gsm_ms", 0x50: "mp2", 0x55: "mp3", 0x161: "wmav2"}
_EXTENSIBLE = 0xFFFE
_CHUNK_HEADER = 8


def read_wav(source: Source) -> Probed:
    head = source.exact(0, 12, "RIFF header")
    order: Literal["big", "little"] = "big" if head.startswith(b"RIFX") else "little"
    rf64 = head.startswith(b"RF64")
    fmt: bytes | None = None
    ds64_data_size: int | None = None
    fact_samples: int | None = None
    offset = 12
    while True:
        source.tick("chunks")
        header = source.exact(offset, _CHUNK_HEADER, "chunk list (no data chunk)")
        chunk_id, size = header[:4], u32(header, 4, order)
        body = offset + _CHUNK_HEADER
        if chunk_id == b"data":
            if rf64 and size == _NOT_RECORDED:
                if ds64_data_size is None:
                    raise malformed("the RF64 file has no ds64 chunk to give its data size")
                size = ds64_data_size
            if fmt is None:
                raise malformed("the WAV file's data chunk comes before its fmt chunk")
            return _probed(source, fmt, data_size=size, data_start=body, fact=fact_samples, endian=order)
        if body + size > source.size:
            raise truncated(f"the file ends inside its '{printable(chunk_id)}' chunk")
        if chunk_id == b"fmt ":
            if size < 16:
                raise malformed(f"the WAV file's fmt chunk is {size} bytes; it takes at least 16")
            fmt = source.read(body, min(size, 40))
        elif chunk_id == b"ds64" and size >= 24:
            ds64_data_size = u64(source.read(body, 24), 8, "little")
        elif chunk_id == b"fact" and size >= 4:
            fact_samples = u32(source.read(body, 4), 0, order)
        offset = body + size + (size & 1)  # chunks start on even offsets


def _probed(
    source: Source, fmt: bytes, *, data_size: int, data_start: int, fact: int | None, endian: Literal["big", "little"]
) -> Probed:
    tag, channels, rate = u16(fmt, 0, endian), u16(fmt, 2, endian), u32(fmt, 4, endian)
    byte_rate, block_align, bits = u32(fmt, 8, endian), u16(fmt, 12, endian), u16(fmt, 14, endian)
    if tag == _EXTENSIBLE and len(fmt) >= 26:
        tag = u16(fmt, 24, endian)  # the sub-format GUID's first two bytes are the format tag
    if data_size == _NOT_RECORDED:
        raise Refused(
            MediaRefusalReason.UNKNOWN_DURATION,
            "the WAV file does not record how much audio it holds (its data size is 0xFFFFFFFF: it was written as a"
            " stream); save it again with an audio editor",
        )
    held = source.size - data_start
    if data_size > held:
        raise truncated(
            f"the WAV file's data chunk claims {spoken_bytes(data_size)} but the file holds {spoken_bytes(held)} of it"
        )
    codec = _LINEAR.get(tag) or _COMPRESSED.get(tag) or f"wav-format-{tag:#x}"
    if tag in _LINEAR:
        codec = _pcm_name(tag, bits, endian)
        duration = data_size / (block_align * rate) if block_align and rate else None
    elif fact is not None and rate:
        duration = fact / rate
    else:
        duration = data_size / byte_rate if byte_rate else None
    return Probed("wav", AUDIO_WAV, duration, (Stream("audio", codec, channels, rate),))


def _pcm_name(tag: int, bits: int, order: Literal["big", "little"]) -> str:
    if tag == 6:
        return "pcm_alaw"
    if tag == 7:
        return "pcm_mulaw"
    suffix = "be" if order == "big" else "le"
    if tag == 3:
        return f"pcm_f{bits}{suffix}"
    return "pcm_u8" if bits == 8 else f"pcm_s{bits}{suffix}"
