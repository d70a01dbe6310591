"""FLAC: STREAMINFO (the first metadata block) gives the rate, the channels and the samples; the other blocks
(pictures, tags, seek tables) are skipped by their sizes, which must end inside the file."""

from dataclasses import dataclass

from shared.adapters.parsers.media.reading import Probed, Source, Stream, malformed, truncated
from shared.domain.media import AUDIO_FLAC

STREAMINFO_BYTES = 34
_BLOCK_HEADER = 4
_LAST_BLOCK = 0x80


@dataclass(frozen=True)
class StreamInfo:
    sample_rate: int
    channels: int
    samples: int  # 0: the encoder did not know (a stream written without seeking back)

    @property
    def duration_seconds(self) -> float | None:
        return self.samples / self.sample_rate if self.samples and self.sample_rate else None


def stream_info(block: bytes) -> StreamInfo:
    """STREAMINFO's fields: 20 bits of sample rate, 3 of channels (less one), 5 of bits per sample, 36 of samples."""
    if len(block) < STREAMINFO_BYTES:
        raise malformed("the FLAC stream's STREAMINFO block is cut short")
    packed = int.from_bytes(block[10:18], "big")
    return StreamInfo(sample_rate=packed >> 44, channels=((packed >> 41) & 0x7) + 1, samples=packed & ((1 << 36) - 1))


def read_flac(source: Source, start: int) -> Probed:
    header = source.exact(start + 4, _BLOCK_HEADER, "FLAC header")
    if header[0] & 0x7F != 0 or int.from_bytes(header[1:4], "big") < STREAMINFO_BYTES:
        raise malformed("the FLAC file does not begin with its STREAMINFO block")
    info = stream_info(source.exact(start + 4 + _BLOCK_HEADER, STREAMINFO_BYTES, "STREAMINFO block"))
    offset = start + 4
    while True:
        source.tick("metadata blocks")
        header = source.exact(offset, _BLOCK_HEADER, "metadata blocks")
        offset += _BLOCK_HEADER + int.from_bytes(header[1:4], "big")
        if offset > source.size:
            raise truncated("the file ends inside a FLAC metadata block")
        if header[0] & _LAST_BLOCK:
            break
    if offset >= source.size:
        raise truncated("the file ends after its FLAC header, before any audio")
    stream = Stream("audio", "flac", info.channels, info.sample_rate)
    return Probed("flac", AUDIO_FLAC, info.duration_seconds, (stream,))
