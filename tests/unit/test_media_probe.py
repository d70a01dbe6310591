"""The media probe (shared/adapters/parsers/media_probe.py) on real recordings that FFmpeg writes through PyAV, made
once per session into a temporary folder, and on hostile ones: every input ends in a MediaInfo or a MediaRefusal,
within its bounds. `make test` runs a short fuzz of damaged recordings; `make fuzz` (QUIRE_FUZZ_EXAMPLES) a long one.
"""

import io
import struct
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.adapters.parsers.media_probe import probe_media
from shared.domain.media import MediaInfo, MediaLimits, MediaRefusal, MediaRefusalReason, same_container_family
from shared.domain.media_sniffing import sniff_media_type
from shared.domain.ranged_reads import RangedReader
from tests.builders.recordings import Recording, write_recording
from tests.unit.fuzzing import DERANDOMIZE, EXAMPLES

pytest.importorskip("av", reason="PyAV (the dev extra) writes the recordings these tests probe")


@dataclass(frozen=True)
class Expected:
    media_type: str
    container: str
    seconds: float
    audio: int
    video: int
    channels: int
    rate: int
    audio_codec: str
    video_codec: str | None = None
    sniffed: str | None = None  # what the first bytes say, when the probe refines it

    @property
    def sniffed_type(self) -> str:
        return self.sniffed or self.media_type


_X264 = {"preset": "ultrafast"}
CASES: dict[str, tuple[Recording, Expected]] = {
    "wav": (
        Recording("wav", "wav", "wav", "pcm_s16le", rate=44_100),
        Expected("audio/wav", "wav", 2.0, 1, 0, 2, 44_100, "pcm_s16le"),
    ),
    "wav-speech": (
        Recording("wav-speech", "wav", "wav", "pcm_s16le", rate=16_000, channels=1, seconds=3.0),
        Expected("audio/wav", "wav", 3.0, 1, 0, 1, 16_000, "pcm_s16le"),
    ),
    "wav-rf64": (
        Recording("wav-rf64", "wav", "wav", "pcm_s24le", channels=1, muxer_options={"rf64": "always"}),
        Expected("audio/wav", "wav", 2.0, 1, 0, 1, 48_000, "pcm_s24le"),
    ),
    "mp3": (
        Recording("mp3", "mp3", "mp3", "libmp3lame", rate=44_100),
        Expected("audio/mpeg", "mp3", 2.0, 1, 0, 2, 44_100, "mp3"),
    ),
    "mp3-without-xing": (
        Recording("mp3-without-xing", "mp3", "mp3", "libmp3lame", muxer_options={"write_xing": "0"}),
        Expected("audio/mpeg", "mp3", 2.0, 1, 0, 2, 48_000, "mp3"),
    ),
    "flac": (
        Recording("flac", "flac", "flac", "flac", rate=44_100, channels=1),
        Expected("audio/flac", "flac", 2.0, 1, 0, 1, 44_100, "flac"),
    ),
    "opus": (
        Recording("opus", "ogg", "ogg", "libopus"),
        Expected("audio/ogg", "ogg", 2.0, 1, 0, 2, 48_000, "opus"),
    ),
    "vorbis": (
        Recording("vorbis", "ogg", "ogg", "vorbis", codec_options={"strict": "experimental"}),
        Expected("audio/ogg", "ogg", 2.0, 1, 0, 2, 48_000, "vorbis"),
    ),
    "ogg-flac": (
        Recording("ogg-flac", "ogg", "oga", "flac", rate=44_100),
        Expected("audio/ogg", "ogg", 2.0, 1, 0, 2, 44_100, "flac"),
    ),
    "m4a": (
        Recording("m4a", "ipod", "m4a", "aac", rate=44_100),
        Expected("audio/mp4", "mp4", 2.0, 1, 0, 2, 44_100, "aac"),
    ),
    "m4a-96k": (
        Recording("m4a-96k", "ipod", "m4a", "aac", rate=96_000, channels=1),
        Expected("audio/mp4", "mp4", 2.0, 1, 0, 1, 96_000, "aac"),
    ),
    "mp4": (
        Recording("mp4", "mp4", "mp4", "aac", video="libx264", codec_options={}),
        Expected("video/mp4", "mp4", 2.0, 1, 1, 2, 48_000, "aac", "h264"),
    ),
    "mp4-audio-only-moov-first": (
        Recording("mp4-audio-only-moov-first", "mp4", "mp4", "aac", muxer_options={"movflags": "+faststart"}),
        Expected("audio/mp4", "mp4", 2.0, 1, 0, 2, 48_000, "aac", sniffed="video/mp4"),
    ),
    "mov": (
        Recording("mov", "mov", "mov", "aac", video="libx264"),
        Expected("video/quicktime", "mov", 2.0, 1, 1, 2, 48_000, "aac", "h264"),
    ),
    "webm-vp8": (
        Recording("webm-vp8", "webm", "webm", "libopus", video="libvpx"),
        Expected("video/webm", "webm", 2.0, 1, 1, 2, 48_000, "opus", "vp8"),
    ),
    "webm-vp9": (
        Recording("webm-vp9", "webm", "webm", "libopus", video="libvpx-vp9"),
        Expected("video/webm", "webm", 2.0, 1, 1, 2, 48_000, "opus", "vp9"),
    ),
    "webm-audio": (
        Recording("webm-audio", "webm", "weba", "libopus", channels=1),
        Expected("audio/webm", "webm", 2.0, 1, 0, 1, 48_000, "opus"),
    ),
    # What a browser's MediaRecorder writes: no Duration, a Segment and clusters of unknown size.
    "webm-streamed": (
        Recording("webm-streamed", "webm", "webm", "libopus", streamed=True, seconds=3.0),
        Expected("audio/webm", "webm", 3.0, 1, 0, 2, 48_000, "opus"),
    ),
    "webm-streamed-video": (
        Recording("webm-streamed-video", "webm", "webm", "libopus", video="libvpx", streamed=True, seconds=3.0),
        Expected("video/webm", "webm", 3.0, 1, 1, 2, 48_000, "opus", "vp8"),
    ),
    "mkv": (
        Recording("mkv", "matroska", "mkv", "aac", video="libx264"),
        Expected("video/x-matroska", "matroska", 2.0, 1, 1, 2, 48_000, "aac", "h264"),
    ),
    "mka": (
        Recording("mka", "matroska", "mka", "flac", rate=44_100),
        Expected("video/x-matroska", "matroska", 2.0, 1, 0, 2, 44_100, "flac"),
    ),
}
# Recordings that are refused as they are, and why.
REFUSED: dict[str, tuple[Recording, MediaRefusalReason, str]] = {
    "mp4-video-only": (
        Recording("mp4-video-only", "mp4", "mp4", None, video="libx264"),
        MediaRefusalReason.NO_AUDIO,
        "the video has no audio track, so there is nothing to transcribe",
    ),
    "wav-streamed": (
        Recording("wav-streamed", "wav", "wav", "pcm_s16le", streamed=True),
        MediaRefusalReason.UNKNOWN_DURATION,
        "the WAV file does not record how much audio it holds",
    ),
    "flac-streamed": (
        Recording("flac-streamed", "flac", "flac", "flac", streamed=True),
        MediaRefusalReason.UNKNOWN_DURATION,
        "the FLAC file does not say how long it lasts",
    ),
    "mp4-fragmented": (
        Recording(
            "mp4-fragmented", "mp4", "mp4", "aac", streamed=True, muxer_options={"movflags": "frag_keyframe+empty_moov"}
        ),
        MediaRefusalReason.UNKNOWN_DURATION,
        "the MP4 file does not say how long it lasts",
    ),
}
# Containers whose structure says where the file should end, so that a file cut in half is refused as cut.
CUT_IS_SEEN = frozenset(
    {"wav", "wav-speech", "wav-rf64", "mp3", "m4a", "m4a-96k", "mp4", "mov", "webm-vp8", "webm-vp9"}
)
CUT_IS_SEEN |= {"webm-audio", "mkv", "mka"}
DURATION_TOLERANCE = 0.1  # an encoder's priming and padding, a live WebM's last frame


@pytest.fixture(scope="session")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("recordings")
    made = {name: recording for name, (recording, _) in CASES.items()}
    made |= {name: recording for name, (recording, _, _) in REFUSED.items()}
    return {name: write_recording(recording, folder).read_bytes() for name, recording in made.items()}


def _info(outcome: MediaInfo | MediaRefusal) -> MediaInfo:
    assert isinstance(outcome, MediaInfo), outcome
    return outcome


def _refusal(outcome: MediaInfo | MediaRefusal) -> MediaRefusal:
    assert isinstance(outcome, MediaRefusal), outcome
    return outcome


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_recording_is_read_as_ffmpeg_wrote_it(recordings: dict[str, bytes], name: str) -> None:
    expected = CASES[name][1]
    info = _info(probe_media(recordings[name]))
    assert (info.media_type, info.container) == (expected.media_type, expected.container)
    assert info.duration_seconds == pytest.approx(expected.seconds, abs=DURATION_TOLERANCE)
    assert (info.audio_streams, info.video_streams) == (expected.audio, expected.video)
    assert (info.channels, info.sample_rate) == (expected.channels, expected.rate)
    assert (info.audio_codec, info.video_codec) == (expected.audio_codec, expected.video_codec)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_first_bytes_sniff_as_the_type_or_its_family(recordings: dict[str, bytes], name: str) -> None:
    expected = CASES[name][1]
    sniffed = sniff_media_type(recordings[name][:8192])
    assert sniffed == expected.sniffed_type
    assert sniffed is not None and same_container_family(sniffed, expected.media_type)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_recording_without_audio_or_a_duration_is_refused_with_its_sentence(
    recordings: dict[str, bytes], name: str
) -> None:
    _, reason, sentence = REFUSED[name]
    refused = _refusal(probe_media(recordings[name]))
    assert refused.reason is reason
    assert refused.sentence.startswith(sentence)


class CountingReader(RangedReader):
    """A seekable stream over bytes, as storage's ranged reads are, counting what it hands out."""

    def __init__(self, content: bytes) -> None:
        super().__init__(len(content))
        self._content = content
        self.fetched = 0

    def _fetch(self, start: int, length: int) -> bytes:
        self.fetched += length
        return self._content[start : start + length]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_seekable_stream_is_read_as_bytes_are_and_the_media_is_skipped(
    recordings: dict[str, bytes], name: str
) -> None:
    content = recordings[name]
    reader = CountingReader(content)
    assert probe_media(reader) == probe_media(content)
    assert probe_media(io.BytesIO(content)) == probe_media(content)
    if name not in {"mp3", "mp3-without-xing", "opus", "vorbis", "ogg-flac"} and "streamed" not in name:
        # Only MP3's sync window and Ogg's or a live WebM's tail are read in bulk; the rest are headers.
        assert reader.fetched < 8 * 1024 < len(content)


def test_the_movie_box_at_the_end_of_a_stream_is_found_by_seeking_past_the_media(recordings: dict[str, bytes]) -> None:
    content = recordings["mp4"]
    assert content.index(b"moov") > content.index(b"mdat")  # FFmpeg writes the index last unless told otherwise
    padded = _with_mdat_grown(content, 50 * 1024 * 1024)
    reader = CountingReader(padded)
    info = _info(probe_media(reader))
    assert info.duration_seconds == pytest.approx(2.0, abs=DURATION_TOLERANCE)
    assert reader.fetched < 8 * 1024


def _with_mdat_grown(content: bytes, extra: int) -> bytes:
    """The same file with `extra` bytes more media: the mdat box's size raised and its end padded (an MP4's sample
    offsets point inside mdat, so bytes at its end move nothing)."""
    at = content.index(b"mdat") - 4
    size = int.from_bytes(content[at : at + 4], "big")
    end = at + size
    grown = (size + extra).to_bytes(4, "big")
    return content[:at] + grown + content[at + 4 : end] + bytes(extra) + content[end:]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_cut_recording_is_refused_or_no_longer_than_the_whole(recordings: dict[str, bytes], name: str) -> None:
    content = recordings[name]
    whole = _info(probe_media(content)).duration_seconds
    cuts = sorted(
        {1, 3, 4, 8, 11, 12, 16, 20, 27, 30, 44, 64, 100, 500, 4096} | {len(content) * k // 8 for k in range(1, 8)}
    )
    for cut in (cut for cut in cuts if cut < len(content)):
        outcome = probe_media(content[:cut])
        if isinstance(outcome, MediaInfo):
            assert outcome.duration_seconds <= whole + DURATION_TOLERANCE, cut
    if name in CUT_IS_SEEN:
        assert _refusal(probe_media(content[: len(content) // 2])).reason is MediaRefusalReason.TRUNCATED


def _patched(content: bytes, at: int, value: bytes) -> bytes:
    return content[:at] + value + content[at + len(value) :]


def _box_body(content: bytes, kind: bytes) -> int:
    return content.index(kind) + 4


def test_an_mp4_claiming_nine_hours_in_a_few_kilobytes_is_not_believed(recordings: dict[str, bytes]) -> None:
    content = recordings["m4a"]
    mvhd = _box_body(content, b"mvhd")
    timescale = int.from_bytes(content[mvhd + 12 : mvhd + 16], "big")
    claimed = _patched(content, mvhd + 16, (9 * 3600 * timescale).to_bytes(4, "big"))
    refused = _refusal(probe_media(claimed))
    assert refused.reason is MediaRefusalReason.IMPLAUSIBLE_DURATION
    assert refused.sentence.startswith(f"the header claims 9 hours of audio in {round(len(content) / 1000, 1):g} KB")


def test_a_flac_claiming_nine_hours_is_not_believed(recordings: dict[str, bytes]) -> None:
    content = recordings["flac"]
    packed = int.from_bytes(content[18:26], "big")  # STREAMINFO's rate, channels, bits and samples
    samples = 9 * 3600 * 44_100
    claimed = _patched(content, 18, ((packed >> 36 << 36) | samples).to_bytes(8, "big"))
    assert _refusal(probe_media(claimed)).reason is MediaRefusalReason.IMPLAUSIBLE_DURATION


def test_a_webm_claiming_nine_hours_is_not_believed(recordings: dict[str, bytes]) -> None:
    content = recordings["webm-audio"]
    duration = content.index(b"\x44\x89\x88")  # Duration, eight bytes: a float of milliseconds
    claimed = _patched(content, duration + 3, struct.pack(">d", 9 * 3600 * 1000.0))
    assert _refusal(probe_media(claimed)).reason is MediaRefusalReason.IMPLAUSIBLE_DURATION


def test_a_recording_past_the_duration_limit_names_it_and_its_setting(recordings: dict[str, bytes]) -> None:
    content = recordings["m4a"]
    mvhd = _box_body(content, b"mvhd")
    timescale = int.from_bytes(content[mvhd + 12 : mvhd + 16], "big")
    claimed = _patched(content, mvhd + 16, round(5.2 * 3600 * timescale).to_bytes(4, "big"))
    refused = _refusal(probe_media(claimed, MediaLimits(min_bytes_per_second=0)))
    assert refused.reason is MediaRefusalReason.TOO_LONG
    assert refused.sentence == "the recording lasts 5.2 hours; the limit is 4 hours (QUIRE_MAX_MEDIA_SECONDS)"


@pytest.mark.parametrize(
    ("limits", "reason", "sentence"),
    [
        (
            MediaLimits(max_seconds=1),
            MediaRefusalReason.TOO_LONG,
            "the recording lasts 2 seconds; the limit is 1 second",
        ),
        (MediaLimits(max_channels=1), MediaRefusalReason.TOO_MANY_CHANNELS, "the audio has 2 channels; the limit is 1"),
        (MediaLimits(min_sample_rate=48_000), MediaRefusalReason.SAMPLE_RATE, "the audio's sample rate is 44,100 Hz"),
        (MediaLimits(max_sample_rate=22_050), MediaRefusalReason.SAMPLE_RATE, "the audio's sample rate is 44,100 Hz"),
        (
            MediaLimits(max_header_bytes=64),
            MediaRefusalReason.TOO_COMPLEX,
            "the file's headers take more than 64 bytes",
        ),
        (MediaLimits(max_elements=3), MediaRefusalReason.TOO_COMPLEX, "the file's structure has more than 3 boxes"),
        (
            MediaLimits(max_depth=2),
            MediaRefusalReason.TOO_COMPLEX,
            "the file's structure nests more than 2 levels deep",
        ),
    ],
)
def test_each_limit_refuses_past_it_with_a_sentence_naming_it(
    recordings: dict[str, bytes], limits: MediaLimits, reason: MediaRefusalReason, sentence: str
) -> None:
    refused = _refusal(probe_media(recordings["m4a"], limits))
    assert refused.reason is reason
    assert refused.sentence.startswith(sentence)


def test_more_streams_than_the_limit_are_refused(recordings: dict[str, bytes]) -> None:
    refused = _refusal(probe_media(recordings["mkv"], MediaLimits(max_streams=1)))
    assert refused.reason is MediaRefusalReason.TOO_MANY_STREAMS
    assert refused.sentence == "the file has at least 2 audio and video streams; the limit is 1"


def _nested_ebml(levels: int, *, known_sizes: bool) -> bytes:
    """A WebM whose Segment holds `levels` Tracks elements, each inside the one before."""
    header = bytes.fromhex("1a45dfa3") + bytes([0x80 | 7]) + bytes.fromhex("4282") + bytes([0x84]) + b"webm"
    tracks = bytes.fromhex("1654ae6b")
    if not known_sizes:
        return header + bytes.fromhex("18538067") + b"\xff" + (tracks + b"\xff") * levels
    # Eight-byte sizes: 0x01 then seven bytes, each level twelve bytes longer than the one inside it.
    nested = b"".join(tracks + b"\x01" + (12 * (levels - 1 - level)).to_bytes(7, "big") for level in range(levels))
    return header + bytes.fromhex("18538067") + b"\x01" + len(nested).to_bytes(7, "big") + nested


def _boxes(count: int) -> bytes:
    return b"".join(struct.pack(">I", 8) + b"free" for _ in range(count))


def _hostile(recordings: dict[str, bytes], name: str) -> bytes:
    m4a, mp3, wav = recordings["m4a"], recordings["mp3"], recordings["wav"]
    trak = m4a.index(b"trak") - 4
    moov = m4a.index(b"moov") - 4
    moov_size = int.from_bytes(m4a[moov : moov + 4], "big")
    data = wav.index(b"data")
    ftyp = int.from_bytes(m4a[:4], "big")
    makers: dict[str, Callable[[], bytes]] = {
        "box past its parent": lambda: _patched(m4a, trak, (moov_size + 1000).to_bytes(4, "big")),
        "box of size 0 inside another": lambda: _patched(m4a, trak, bytes(4)),
        "box smaller than its header": lambda: _patched(m4a, trak, (4).to_bytes(4, "big")),
        "large box size of 0": lambda: _patched(m4a, trak, (1).to_bytes(4, "big") + b"trak" + bytes(8)),
        "top-level box past the file": lambda: _patched(m4a, moov, (1 << 31).to_bytes(4, "big")),
        "twenty thousand empty boxes": lambda: m4a[:ftyp] + _boxes(20_000) + m4a[ftyp:],
        "a million nested EBML elements of unknown size": lambda: _nested_ebml(1_000_000, known_sizes=False),
        "a million nested EBML elements": lambda: _nested_ebml(1_000_000, known_sizes=True),
        "RIFF data chunk of 0xFFFFFFFF bytes": lambda: _patched(wav, data + 4, b"\xff\xff\xff\xff"),
        "RIFF data chunk past the file": lambda: _patched(wav, data + 4, (len(wav) * 2).to_bytes(4, "little")),
        "RIFF fmt chunk too short": lambda: _patched(wav, wav.index(b"fmt ") + 4, (8).to_bytes(4, "little")),
        "ID3 tag of 256 MB": lambda: b"ID3\x04\x00\x00\x7f\x7f\x7f\x7f" + mp3,
        "ID3 tag and nothing else": lambda: b"ID3\x04\x00\x00\x00\x00\x00\x10" + bytes(16),
        "Ogg magic and no page": lambda: b"OggS",
        "Ogg page header and nothing else": lambda: b"OggS\x00\x02" + bytes(21),
        "Ogg page of an unknown codec": lambda: b"OggS\x00\x02" + bytes(20) + b"\x01\x08" + b"whatever",
        "FLAC magic alone": lambda: b"fLaC",
        "EBML header of another document type": lambda: bytes.fromhex("1a45dfa3") + b"\x87\x42\x82\x84abcd",
        "nothing": lambda: b"",
        "a PDF": lambda: b"%PDF-1.7\n" + bytes(100),
        "an AVI": lambda: b"RIFF" + bytes(4) + b"AVI LIST" + bytes(100),
        "MPEG frame sync and junk": lambda: b"\xff\xfb\x90\x00" + bytes(100),
    }
    return makers[name]()


HOSTILE = {
    "box past its parent": (MediaRefusalReason.MALFORMED, "the 'trak' box's size points past the end of 'moov'"),
    "box of size 0 inside another": (MediaRefusalReason.MALFORMED, "the 'trak' box inside 'moov' has size 0"),
    "box smaller than its header": (MediaRefusalReason.MALFORMED, "the 'trak' box's size (4) is smaller"),
    "large box size of 0": (MediaRefusalReason.MALFORMED, "the 'trak' box's size (0) is smaller"),
    "top-level box past the file": (MediaRefusalReason.TRUNCATED, "the file ends inside its 'moov' box"),
    "twenty thousand empty boxes": (MediaRefusalReason.TOO_COMPLEX, "the file's structure has more than 10,000 boxes"),
    "a million nested EBML elements of unknown size": (MediaRefusalReason.MALFORMED, "an element of unknown size"),
    "a million nested EBML elements": (MediaRefusalReason.NO_AUDIO, "the file has no audio stream"),
    "RIFF data chunk of 0xFFFFFFFF bytes": (MediaRefusalReason.UNKNOWN_DURATION, "the WAV file does not record"),
    "RIFF data chunk past the file": (MediaRefusalReason.TRUNCATED, "the WAV file's data chunk claims"),
    "RIFF fmt chunk too short": (MediaRefusalReason.MALFORMED, "the WAV file's fmt chunk is 8 bytes"),
    "ID3 tag of 256 MB": (MediaRefusalReason.TRUNCATED, "the file's ID3 tag claims 268.4 MB"),
    "ID3 tag and nothing else": (MediaRefusalReason.MALFORMED, "no MPEG audio frame follows"),
    "Ogg magic and no page": (MediaRefusalReason.TRUNCATED, "the file ends inside an Ogg page"),
    "Ogg page header and nothing else": (MediaRefusalReason.UNSUPPORTED, "the Ogg file holds no stream"),
    "Ogg page of an unknown codec": (MediaRefusalReason.UNSUPPORTED, "the Ogg file holds no stream"),
    "FLAC magic alone": (MediaRefusalReason.TRUNCATED, "the file ends inside its FLAC header"),
    "EBML header of another document type": (MediaRefusalReason.UNSUPPORTED, "an EBML file of type 'abcd'"),
    "nothing": (MediaRefusalReason.NOT_MEDIA, "the file is not a recording Quire reads"),
    "a PDF": (MediaRefusalReason.NOT_MEDIA, "the file is not a recording Quire reads (WAV, MP3"),
    "an AVI": (MediaRefusalReason.NOT_MEDIA, "the file is not a recording Quire reads"),
    "MPEG frame sync and junk": (MediaRefusalReason.MALFORMED, "no MPEG audio frame follows"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_recording_is_refused_with_its_reason(recordings: dict[str, bytes], name: str) -> None:
    reason, sentence = HOSTILE[name]
    refused = _refusal(probe_media(_hostile(recordings, name)))
    assert (refused.reason, refused.sentence[: len(sentence)]) == (reason, sentence)


def test_a_big_endian_rifx_wav_is_read() -> None:
    rate, channels, bits, data = 22_050, 1, 16, bytes(22_050 * 2)
    fmt = struct.pack(">HHIIHH", 1, channels, rate, rate * channels * bits // 8, channels * bits // 8, bits)
    chunks = b"fmt " + struct.pack(">I", len(fmt)) + fmt + b"data" + struct.pack(">I", len(data)) + data
    info = _info(probe_media(b"RIFX" + struct.pack(">I", 4 + len(chunks)) + b"WAVE" + chunks))
    assert (info.duration_seconds, info.sample_rate, info.audio_codec) == (1.0, rate, "pcm_s16be")


@pytest.mark.parametrize(("name", "media_type"), [("flac", "audio/flac"), ("mp3", "audio/mpeg")])
def test_an_id3_tag_in_front_is_skipped(recordings: dict[str, bytes], name: str, media_type: str) -> None:
    tag = b"ID3\x03\x00\x00" + bytes([0, 0, 8, 0]) + b"TIT2" + bytes(1020)  # a 1 KB tag (sizes are 7 bits a byte)
    content = tag + recordings[name]
    assert sniff_media_type(content[:8192]) == media_type
    info = _info(probe_media(content))
    assert info.media_type == media_type
    assert info.duration_seconds == pytest.approx(2.0, abs=DURATION_TOLERANCE)


def test_a_pdf_is_told_apart_in_the_sentence() -> None:
    refused = _refusal(probe_media(b"%PDF-1.7\n" + bytes(100)))
    assert refused.sentence.endswith("it looks like a PDF")


def test_a_stream_that_cannot_seek_is_a_programmers_error() -> None:
    class Unseekable(io.RawIOBase):
        def readable(self) -> bool:
            return True

    with pytest.raises(ValueError, match="seekable"):
        probe_media(Unseekable())


FUZZ_SEEDS = ("wav", "mp3", "flac", "opus", "m4a", "mp4", "mov", "webm-vp8", "webm-streamed", "mkv")


@pytest.mark.parametrize("name", FUZZ_SEEDS)
@settings(max_examples=EXAMPLES, derandomize=DERANDOMIZE, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=8),
    cut=st.integers(min_value=1, max_value=1 << 20),
    header_focus=st.booleans(),
)
def test_fuzz_a_damaged_recording_is_a_value_within_the_limits(
    recordings: dict[str, bytes], name: str, edits: list[tuple[int, int]], cut: int, header_focus: bool
) -> None:
    seed = recordings[name]
    content = bytearray(seed[: max(cut, 1)])
    # Half the examples damage the first kilobyte, where the headers are; the rest anywhere.
    span = min(len(content), 1024) if header_focus else len(content)
    for position, value in edits:
        content[position % span] = value
    limits = MediaLimits()
    outcome = probe_media(bytes(content), limits)
    if isinstance(outcome, MediaRefusal):
        assert outcome.sentence
        return
    assert isinstance(outcome, MediaInfo)
    assert 0 < outcome.duration_seconds <= limits.max_seconds
    assert 1 <= outcome.channels <= limits.max_channels
    assert limits.min_sample_rate <= outcome.sample_rate <= limits.max_sample_rate
    assert outcome.audio_streams >= 1 and outcome.audio_streams + outcome.video_streams <= limits.max_streams
    assert same_container_family(outcome.media_type, CASES[name][1].media_type)
