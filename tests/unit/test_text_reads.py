"""Bounded reads of text files: at most 32 KiB, clamped not refused, never splitting a character, resuming
exactly where the last read stopped, in UTF-8 (with or without a byte-order mark), UTF-16 or a single-byte
encoding."""

import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.text_reads import (
    ENCODING_PROBE_BYTES,
    MAX_TEXT_READ_BYTES,
    clamp_read,
    decode_slice,
    detect_encoding,
)


def read_all(content: bytes, limit: int) -> tuple[str, int, str]:
    probe = content[:ENCODING_PROBE_BYTES]
    encoding = detect_encoding(probe, whole_file=len(probe) == len(content))
    pieces: list[str] = []
    offset: int | None = 0
    calls = 0
    while offset is not None:
        start, length = clamp_read(offset, limit, len(content))
        piece = decode_slice(
            content[start : start + length], offset=offset, limit=limit, total_bytes=len(content), encoding=encoding
        )
        # Over the bound only to take one whole character (after a byte-order mark) when the bound is smaller.
        assert piece.byte_length <= max(min(limit, MAX_TEXT_READ_BYTES), 7)
        assert piece.byte_length > 0 or not content
        pieces.append(piece.text)
        offset = piece.next_offset
        calls += 1
    return "".join(pieces), calls, encoding


TEXT = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=300)


@settings(max_examples=200, deadline=None)
@given(TEXT, st.integers(min_value=1, max_value=40))
def test_utf8_reads_rejoin_to_the_text_whatever_the_bound(text: str, limit: int) -> None:
    joined, _, encoding = read_all(text.encode(), limit)
    assert joined == text and encoding == "utf-8"


@settings(max_examples=100, deadline=None)
@given(TEXT, st.integers(min_value=1, max_value=40), st.sampled_from(["utf-16-le", "utf-16-be", "utf-8-sig"]))
def test_marked_encodings_rejoin_whatever_the_bound(text: str, limit: int, codec: str) -> None:
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE, "utf-8-sig": b""}[codec]
    joined, _, encoding = read_all(bom + text.encode(codec), limit)
    assert joined == text and encoding == codec


def test_a_larger_request_is_clamped_to_32_kib() -> None:
    content = ("ab€" * 40_000).encode()
    start, length = clamp_read(0, 10**9, len(content))
    piece = decode_slice(
        content[start : start + length], offset=0, limit=10**9, total_bytes=len(content), encoding="utf-8"
    )
    assert piece.byte_length <= MAX_TEXT_READ_BYTES
    # It stops before the euro sign the bound cut, and the next read starts on a character.
    assert piece.next_offset == piece.byte_length
    content[piece.byte_length :].decode()
    joined, calls, _ = read_all(content, 10**9)
    assert joined == "ab€" * 40_000 and calls == -(-len(content) // MAX_TEXT_READ_BYTES)


def test_an_8_bit_file_that_is_not_utf8_is_read_as_windows_1252() -> None:
    content = "Straße, café, naïve: ".encode("cp1252") * 10
    joined, _, encoding = read_all(content, 7)
    assert joined == "Straße, café, naïve: " * 10 and encoding == "cp1252"


def test_an_offset_past_the_end_or_inside_a_utf16_character_is_refused() -> None:
    with pytest.raises(ValueError, match="past the end"):
        clamp_read(11, 100, 10)
    with pytest.raises(ValueError, match="offset must be"):
        clamp_read(-1, 100, 10)
    with pytest.raises(ValueError, match="inside a character"):
        decode_slice(b"a\x00b\x00", offset=1, limit=10, total_bytes=6, encoding="utf-16-le")


def test_an_empty_file_reads_as_nothing_and_ends() -> None:
    piece = decode_slice(b"", offset=0, limit=100, total_bytes=0, encoding="utf-8")
    assert piece.text == "" and piece.next_offset is None


@pytest.mark.parametrize(("content", "limit"), [(codecs.BOM_UTF8, 2), (codecs.BOM_UTF16_LE, 1), (b"", 1)])
def test_a_file_that_is_only_a_byte_order_mark_ends_instead_of_repeating_its_offset(content: bytes, limit: int) -> None:
    joined, calls, _ = read_all(content, limit)
    assert joined == "" and calls == 1


def test_a_utf8_offset_inside_a_character_is_refused() -> None:
    content = "é東".encode()
    with pytest.raises(ValueError, match="inside a character"):
        decode_slice(content[1:], offset=1, limit=10, total_bytes=len(content), encoding="utf-8")
