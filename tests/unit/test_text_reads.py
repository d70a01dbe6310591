"""Bounded reads of text files: at most 32 KiB, clamped not refused, never splitting a character, resuming
exactly where the last read stopped, in UTF-8 or a single-byte encoding."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.domain.text_reads import MAX_TEXT_READ_BYTES, clamp_read, decode_slice


def read_all(content: bytes, limit: int) -> tuple[str, int]:
    pieces: list[str] = []
    offset: int | None = 0
    calls = 0
    while offset is not None:
        start, length = clamp_read(offset, limit, len(content))
        piece = decode_slice(content[start : start + length], offset=offset, limit=limit, total_bytes=len(content))
        assert piece.byte_length <= max(min(limit, MAX_TEXT_READ_BYTES), 4)
        pieces.append(piece.text)
        offset = piece.next_offset
        calls += 1
    return "".join(pieces), calls


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=300), st.integers(min_value=1, max_value=40))
def test_utf8_reads_rejoin_to_the_text_whatever_the_bound(text: str, limit: int) -> None:
    content = text.encode("utf-8", errors="surrogatepass")
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        return  # lone surrogates are not UTF-8 text
    joined, _ = read_all(content, limit)
    assert joined == text


def test_a_larger_request_is_clamped_to_32_kib() -> None:
    content = ("ab€" * 40_000).encode()
    start, length = clamp_read(0, 10**9, len(content))
    piece = decode_slice(content[start : start + length], offset=0, limit=10**9, total_bytes=len(content))
    assert piece.byte_length <= MAX_TEXT_READ_BYTES
    # It stops before the euro sign the bound cut, and the next read starts on it.
    assert piece.next_offset == piece.byte_length
    assert content[piece.byte_length :].decode().startswith(("a", "b", "€"))
    joined, calls = read_all(content, 10**9)
    assert joined == "ab€" * 40_000 and calls == -(-len(content) // MAX_TEXT_READ_BYTES)


def test_a_single_byte_encoding_is_read_as_such() -> None:
    content = "Straße, café, naïve: ".encode("cp1252") * 10
    joined, _ = read_all(content, 7)
    assert joined == "Straße, café, naïve: " * 10


def test_an_offset_past_the_end_is_refused() -> None:
    with pytest.raises(ValueError, match="past the end"):
        clamp_read(11, 100, 10)
    with pytest.raises(ValueError, match="offset must be"):
        clamp_read(-1, 100, 10)


def test_an_empty_file_reads_as_nothing_and_ends() -> None:
    piece = decode_slice(b"", offset=0, limit=100, total_bytes=0)
    assert piece.text == "" and piece.next_offset is None
