"""The inflated-bytes ceiling, counted before PDFium inflates: every stream PDFium would decode to read
text is counted, through every filter chain it decodes, whatever the dictionary does to look harmless.

Each test builds a page whose content (or font, or inline image) inflates past a small ceiling, and
asserts the parser refuses it as too large; PDFium reads every one of these pages (checked in
`test_pdfium_reads_every_decoy`), so a decoy that slipped past would be inflated for real.
"""

import base64
import re
import struct
import zlib
from collections.abc import Callable
from functools import cache

import pytest

from shared.adapters.parsers.pdf import PdfParser
from shared.adapters.parsers.pdf_inflation import inflation_failure
from shared.domain.document import ExtractedDocument, ExtractionFailure, ExtractionLimits
from shared.domain.files import FailureReason
from shared.local.hostile_corpus import raw_pdf
from tests.builders.pdf import lzw, run_length

CEILING = 1024 * 1024
LIMITS = ExtractionLimits(max_inflated_bytes=CEILING)
TEXT = b"BT /F1 12 Tf 72 720 Td (Text drawn by the content stream of this page) Tj ET\n"
# Content that inflates to four times the ceiling: drawing operators, so PDFium reads it as content.
BOMB = TEXT + b"0 0 m\n" * (4 * CEILING // 6)
CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def page(
    stream_dictionary: bytes, data: bytes, *, keyword_line: bytes = b"stream\n", extra: tuple[bytes, ...] = ()
) -> bytes:
    """One page whose /Contents is object 4: `<< stream_dictionary /Length n >>` and `data`."""
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< " + stream_dictionary + f" /Length {len(data)} >>\n".encode() + keyword_line + data + b"\nendstream",
            FONT,
            *extra,
        ]
    )


def outcome(content: bytes, limits: ExtractionLimits = LIMITS) -> ExtractedDocument | ExtractionFailure:
    return PdfParser().parse(content, limits)


def too_large(ceiling: int) -> ExtractionFailure:
    return ExtractionFailure(
        reason=FailureReason.TOO_LARGE, detail=f"its compressed streams inflate past {ceiling} bytes"
    )


def refused_as_too_large(content: bytes) -> bool:
    result = outcome(content)
    return isinstance(result, ExtractionFailure) and result.reason is FailureReason.TOO_LARGE


# Every way a content stream used to slip past the count; PDFium inflates each of them. Built when used
# (the LZW encoder in tests/builders/pdf.py is slow on purpose: it is the plainest one).
IMAGE_DICTIONARY = b"/Type /XObject /Subtype /Image /Width 1 /Height 1 /BitsPerComponent 8 /ColorSpace /DeviceGray"
DECOYS: dict[str, Callable[[], bytes]] = {
    "/Subtype /Image inside a string": lambda: page(
        b"/Note (/Subtype /Image) /Filter /FlateDecode", zlib.compress(BOMB)
    ),
    "a key whose name starts with /Image": lambda: page(
        b"/ImageNotes (none) /Filter /FlateDecode", zlib.compress(BOMB)
    ),
    "/Fl followed by a newline": lambda: page(b"/Filter /Fl\n", zlib.compress(BOMB)),
    "/Filter [/Fl] without spaces": lambda: page(b"/Filter[/Fl]", zlib.compress(BOMB)),
    "a name written with #xx escapes": lambda: page(b"/Filter /Fl#61teDecode", zlib.compress(BOMB)),
    "a comment inside the dictionary": lambda: page(b"/Filter % the filter\n/Fl\n", zlib.compress(BOMB)),
    "a dictionary longer than 4096 bytes": lambda: page(
        b"/Filter /FlateDecode /Padding (" + b"x" * 5000 + b")", zlib.compress(BOMB)
    ),
    "the word obj in a string of the dictionary": lambda: page(
        b"/Filter /FlateDecode /Note (obj)", zlib.compress(BOMB)
    ),
    "spaces after the stream keyword": lambda: page(
        b"/Filter /FlateDecode", zlib.compress(BOMB), keyword_line=b"stream  \n"
    ),
    "a carriage return alone after the stream keyword": lambda: page(
        b"/Filter /FlateDecode", zlib.compress(BOMB), keyword_line=b"stream\r"
    ),
    "an indirect /Filter": lambda: page(b"/Filter 6 0 R", zlib.compress(BOMB), extra=(b"[/FlateDecode]",)),
    "ASCII85 before Flate": lambda: page(
        b"/Filter [/ASCII85Decode /FlateDecode]", base64.a85encode(zlib.compress(BOMB)) + b"~>"
    ),
    "ASCIIHex before Flate": lambda: page(b"/Filter [/AHx /Fl]", zlib.compress(BOMB).hex().encode() + b">"),
    "LZW alone": lambda: page(b"/Filter /LZWDecode", lzw(BOMB)),
    "LZW after Flate": lambda: page(b"/Filter [/FlateDecode /LZWDecode]", zlib.compress(lzw(BOMB))),
    "run-length alone": lambda: page(b"/Filter /RunLengthDecode", run_length(TEXT + b" " * 4 * CEILING)),
    # Read from the header inside the string, `<< /Subtype /Image /K\() ... >>` ends where the real one does.
    "an image dictionary behind a header inside a string": lambda: page(
        b"/Filter /FlateDecode /Note (5 0 obj << /Subtype /Image /K\\()", zlib.compress(BOMB)
    ),
    "a real /Subtype /Image that a page uses as its content": lambda: page(
        IMAGE_DICTIONARY + b" /Filter /FlateDecode", zlib.compress(BOMB)
    ),
    "an inline image in uncompressed content": lambda: page(
        b"",
        TEXT + b"q BI /W 4000 /H 1048 /BPC 8 /CS /G /F /Fl ID " + zlib.compress(b"\0" * 4 * CEILING) + b" EI Q",
    ),
}


@cache
def decoy(name: str) -> bytes:
    return DECOYS[name]()


@pytest.mark.slow
@pytest.mark.parametrize("name", DECOYS)
def test_a_content_stream_is_counted_whatever_its_dictionary_does_to_look_harmless(name: str) -> None:
    # Given a page whose content inflates to four times the ceiling, dressed as a decoy
    content = decoy(name)
    assert len(content) < CEILING
    # When it is parsed, then it is refused before PDFium inflates it
    assert refused_as_too_large(content), name


@pytest.mark.slow
@pytest.mark.parametrize("name", DECOYS)
def test_pdfium_reads_every_decoy(name: str) -> None:
    # Given the same decoys, under a ceiling they fit in
    limits = ExtractionLimits(max_inflated_bytes=64 * CEILING)
    # When parsed, then PDFium reads the page's text: each decoy is a stream PDFium really decodes
    result = outcome(decoy(name), limits)
    assert isinstance(result, ExtractedDocument), result
    assert "Text drawn by the content stream" in " ".join(block.text for block in result.blocks)


def content_split_into_streams(pieces: list[bytes]) -> bytes:
    numbers = " ".join(f"{6 + index} 0 R" for index in range(len(pieces)))
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents [{numbers}]".encode()
            + b" /Resources << /Font << /F1 5 0 R >> >> >>",
            b"<< >>",
            FONT,
            *(f"<< /Filter /FlateDecode /Length {len(p)} >>\nstream\n".encode() + p + b"\nendstream" for p in pieces),
        ]
    )


def flate_then_invalid_block(data: bytes) -> bytes:
    """A zlib stream that inflates `data` and then breaks (a block of the reserved type 3)."""
    compressor = zlib.compressobj(9)
    return compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH) + b"\x06\x00"


def test_streams_that_break_after_their_payload_are_still_counted() -> None:
    # Given content split into eight streams, each inflating to 0.9 of the ceiling and then damaged
    # (CPython's zlib discards the output of a call that fails; PDFium keeps what it inflated)
    pieces = [flate_then_invalid_block((TEXT if i == 0 else b"") + b"0 0 m\n" * (CEILING * 9 // 60)) for i in range(8)]
    content = content_split_into_streams(pieces)
    # When parsed, then the count includes what each stream inflated before it broke
    assert refused_as_too_large(content)


def test_one_content_stream_shared_by_many_pages_counts_once_per_page() -> None:
    # Given ten pages that all draw the same content stream, inflating to a third of the ceiling
    # (PDFium inflates a page's content when it loads the page, so ten times)
    data = zlib.compress(TEXT + b"0 0 m\n" * (CEILING // 18))
    kids = " ".join(f"{3 + i} 0 R" for i in range(10))
    pages = [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 13 0 R"
        b" /Resources << /Font << /F1 14 0 R >> >> >>"
    ] * 10
    content = raw_pdf(
        [
            CATALOG,
            f"<< /Type /Pages /Kids [{kids}] /Count 10 >>".encode(),
            *pages,
            f"<< /Filter /FlateDecode /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream",
            FONT,
        ]
    )
    # When parsed, then it is counted per page that draws it
    assert refused_as_too_large(content)


def with_object_at(content: bytes, number: int, header: bytes) -> bytes:
    """`content` with a cross-reference table that also lists object `number` where `header` is."""
    body = content[: content.rindex(b"xref\n")]
    offsets = [body.index(f"\n{n} 0 obj\n".encode()) + 1 for n in range(1, number)] + [body.index(header)]
    xref = f"xref\n0 {number + 1}\n0000000000 65535 f \n".encode()
    xref += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    trailer = f"trailer\n<< /Size {number + 1} /Root 1 0 R >>\nstartxref\n{len(body)}\n%%EOF\n".encode()
    return body + xref + trailer


def test_a_stream_hidden_inside_an_image_is_counted() -> None:
    # Given a content stream whose object lies inside the data of an image: the cross-reference table
    # points into the image, and PDFium loads an object where the table says
    compressed = zlib.compress(BOMB)
    hidden = b"6 0 obj\n<< /Filter /FlateDecode /Length %d >>\nstream\n" % len(compressed)
    image = b"\xff" * 64 + hidden + compressed + b"\nendstream\nendobj\n" + b"\xff" * 64
    content = page(IMAGE_DICTIONARY, image).replace(b"/Contents 4 0 R", b"/Contents 6 0 R")
    content = with_object_at(content, 6, b"6 0 obj\n<< /Filter")
    assert "Text drawn by the content stream" in text_pdfium_reads(content)
    # When parsed, then the hidden stream is counted (the image itself is not decoded to read text)
    assert refused_as_too_large(content)


def text_pdfium_reads(content: bytes) -> str:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(content)
    try:
        return "".join(page.get_textpage().get_text_range() for page in document)
    finally:
        document.close()


def test_an_image_a_page_only_draws_is_not_counted() -> None:
    # Given a page that draws a Flate image inflating to four times the ceiling, and some text
    pixels = zlib.compress(b"\x80" * 4 * CEILING)
    drawing = TEXT + b"q 100 0 0 100 0 0 cm /Im1 Do Q\n"
    content = raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> >>",
            f"<< /Length {len(drawing)} >>\nstream\n".encode() + drawing + b"\nendstream",
            FONT,
            b"<< /Type /XObject /Subtype /Image /Width 2048 /Height 2048 /BitsPerComponent 8 /ColorSpace /DeviceGray"
            + f" /Filter /FlateDecode /Length {len(pixels)} >>\nstream\n".encode()
            + pixels
            + b"\nendstream",
        ]
    )
    # When parsed, then the image does not count (PDFium does not decode it to read text)
    result = outcome(content)
    assert isinstance(result, ExtractedDocument), result


@pytest.mark.parametrize("size", [CEILING, CEILING + 1])
def test_the_count_is_exact_through_every_filter(size: int) -> None:
    # Given a content stream that inflates to exactly `size` bytes through A85, LZW and Flate
    data = (TEXT + b"0 0 m\n" * size)[:size]
    encoded = base64.a85encode(lzw(zlib.compress(data, 1))) + b"~>"
    content = page(b"/Filter [/A85 /LZW /Fl]", encoded)
    # When parsed with the ceiling, then only past the ceiling is it too large (every stage counts:
    # the LZW and A85 outputs are smaller than the content, so the ceiling binds on the Flate output
    # plus them; the limit is set so that only the exact count decides)
    intermediate = len(lzw(zlib.compress(data, 1))) + len(zlib.compress(data, 1))
    limits = ExtractionLimits(max_inflated_bytes=CEILING + intermediate)
    result = outcome(content, limits)
    assert isinstance(result, ExtractionFailure) == (size > CEILING), result


@pytest.mark.timeout(60)
@pytest.mark.parametrize("trailing", [b"x", b"garbage after the zlib end" * 40])
def test_a_flate_stream_with_bytes_after_its_end_is_counted_and_the_scan_returns(trailing: bytes) -> None:
    # Given a content stream whose zlib data ends before `endstream`, with bytes to spare, and whose
    # inflated size is a whole number of megabytes (the scan's old piece size: the case that looped forever)
    data = zlib.compress((TEXT + b"0 0 m\n" * CEILING)[: 2 * CEILING]) + trailing
    content = page(b"/Filter /FlateDecode", data)
    # When parsed with a ceiling it fits in, then the scan returns and PDFium reads the page
    result = outcome(content, ExtractionLimits(max_inflated_bytes=4 * CEILING))
    assert isinstance(result, ExtractedDocument), result
    assert result.pages_without_text == ()


def with_object_stream(loose: dict[int, bytes], packed: dict[int, bytes]) -> bytes:
    """A PDF 1.5 file: `loose` objects at top level, `packed` ones inside one compressed object stream,
    and a cross-reference stream that says where each is."""
    out = bytearray(b"%PDF-1.7\n")
    offsets: dict[int, int] = {}
    for number, body in loose.items():
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    pairs, bodies = [], b""
    for number, body in packed.items():
        pairs.append(b"%d %d" % (number, len(bodies)))
        bodies += body + b"\n"
    head = b" ".join(pairs) + b"\n"
    packing = max(*loose, *packed) + 1
    data = zlib.compress(head + bodies)
    offsets[packing] = len(out)
    out += b"%d 0 obj\n<< /Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d >>\nstream\n" % (
        packing,
        len(packed),
        len(head),
        len(data),
    )
    out += data + b"\nendstream\nendobj\n"
    listing = packing + 1
    rows = []
    for number in range(listing + 1):
        if number in offsets:
            rows.append(struct.pack(">BIH", 1, offsets[number], 0))
        elif number in packed:
            rows.append(struct.pack(">BIH", 2, packing, list(packed).index(number)))
        elif number == listing:
            rows.append(struct.pack(">BIH", 1, len(out), 0))
        else:
            rows.append(struct.pack(">BIH", 0, 0, 0))
    table = zlib.compress(b"".join(rows))
    start = len(out)
    out += b"%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Filter /FlateDecode /Length %d >>\n" % (
        listing,
        listing + 1,
        len(table),
    )
    out += b"stream\n" + table + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % start
    return bytes(out)


PACKED_PAGE = {
    1: CATALOG,
    2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
    b" /Resources << /Font << /F1 5 0 R >> >> >>",
    5: FONT,
}


def test_a_page_packed_in_an_object_stream_that_uses_an_image_as_content_is_counted() -> None:
    # Given a page whose dictionary is inside a compressed object stream (so its /Contents is not in
    # the file's own bytes) and whose content stream says it is an image
    data = zlib.compress(BOMB)
    contents = IMAGE_DICTIONARY + b" /Filter /FlateDecode /Length %d >>\nstream\n" % len(data)
    content = with_object_stream({4: b"<< " + contents + data + b"\nendstream"}, PACKED_PAGE)
    assert "Text drawn by the content stream" in text_pdfium_reads(content)
    # When parsed, then the use found inside the object stream makes it count
    assert refused_as_too_large(content)


def test_a_length_kept_in_an_object_stream_delimits_a_stream_that_contains_endstream() -> None:
    # Given a content stream whose compressed data starts with a stored block reading "endstream" (the
    # first `endstream` is inside the data) and whose /Length is a number kept in an object stream
    stored = b"\nendstream\n"
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = b"\x78\x01\x00" + struct.pack("<HH", len(stored), len(stored) ^ 0xFFFF) + stored
    data += deflater.compress(BOMB) + deflater.flush() + struct.pack(">I", zlib.adler32(stored + BOMB))
    stream = b"<< /Filter /FlateDecode /Length 9 0 R >>\nstream\n" + data + b"\nendstream"
    content = with_object_stream({4: stream}, {**PACKED_PAGE, 9: b"%d" % len(data)})
    assert "Text drawn by the content stream" in text_pdfium_reads(content)
    # When parsed, then the stream is counted to its real end
    assert refused_as_too_large(content)


@pytest.mark.timeout(30)
def test_object_headers_nested_in_one_another_s_strings_are_malformed_not_read_over_and_over() -> None:
    # Given 100 KB of object headers, each opening a string the next header sits inside, before a stream:
    # every header's dictionary was read to the end of all the others (42 s for this file)
    content = b"%PDF-1.7\n" + b"1 0 obj<</a(" * 8_000 + b")" * 8_000 + b">>\nstream\nx\nendstream\nendobj\n"
    # When parsed, then the scan stops early and says the file is damaged
    result = outcome(content)
    assert isinstance(result, ExtractionFailure) and result.reason is FailureReason.MALFORMED, result
    assert "nested in one another" in result.detail


@pytest.mark.timeout(30)
def test_an_object_defined_thousands_of_times_over_is_resolved_once_and_the_bomb_after_it_counted() -> None:
    # Given 12,000 definitions of object 1 and as many streams whose /Length names it (40 s for this
    # shape: each stream compared every definition), then a page whose content inflates past the ceiling
    redefinitions = b"1 0 obj 5 endobj\n7 0 obj<</Length 1 0 R>>stream\nhello\nendstream endobj\n" * 12_000
    data = zlib.compress(BOMB)
    content = page(b"/Filter /FlateDecode", data).replace(b"%PDF-1.7\n", b"%PDF-1.7\n" + redefinitions, 1)
    assert content.count(b"1 0 obj") == 12_001
    # When parsed, then the scan returns and the bomb is still counted
    assert refused_as_too_large(content)


# A content stream of 64 KiB: one use stays far below the ceiling, fifty pass it.
SMALL_CONTENT = zlib.compress(TEXT + b"0 0 m\n" * (64 * 1024 // 6))


def content_array(definitions: list[bytes]) -> bytes:
    """One page whose /Contents is object 5, an array defined once per item of `definitions` (each
    naming stream 6, 64 KiB of content); the last definition is the one the cross-reference names."""
    objects = [
        CATALOG,
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R >>",
        b"<< >>",
        definitions[-1],
        b"<< /Filter /FlateDecode /Length %d >>\nstream\n" % len(SMALL_CONTENT) + SMALL_CONTENT + b"\nendstream",
    ]
    earlier = b"".join(b"5 0 obj\n" + definition + b"\nendobj\n" for definition in definitions[:-1])
    return raw_pdf(objects).replace(b"%PDF-1.7\n", b"%PDF-1.7\n" + earlier, 1)


@pytest.mark.parametrize(
    "earlier",
    [[b"[" + b"6 0 R " * 300 + b"]"] * 64, [b"[6 0 R]"]],
    ids=["sixty-five-copies", "one-decoy-that-disagrees"],
)
def test_a_content_array_defined_more_than_once_counts_each_stream_as_often_as_a_definition_names_it(
    earlier: list[bytes],
) -> None:
    # Given a page whose /Contents array names one stream 300 times, defined again before it (65 copies;
    # or one that names it once): a reference with definitions that disagree, or with more than 64 of
    # them, resolves to unknown, and the array's streams were counted once (PDFium held 676 MB)
    content = content_array([*earlier, b"[" + b"6 0 R " * 300 + b"]"])
    # When scanned, then the stream counts 300 times over, past the ceiling
    assert inflation_failure(content, CEILING) == too_large(CEILING)


def test_an_object_stream_behind_a_decoy_header_still_names_the_uses_of_its_pages() -> None:
    # Given 40 pages packed in an object stream, all loading one content stream that comes before it in
    # the file, and a decoy header whose string swallows the object stream's header (the two headers
    # disagree on its dictionary, so it is not known to be an object stream)
    packed = {
        1: CATALOG,
        2: b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (100 + i) for i in range(40)) + b"] /Count 40 >>",
    }
    packed |= {100 + i: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>" for i in range(40)}
    content = with_object_stream(
        {4: b"<< /Filter /FlateDecode /Length %d >>\nstream\n" % len(SMALL_CONTENT) + SMALL_CONTENT + b"\nendstream"},
        packed,
    )
    decoyed = re.sub(rb"(\d+ 0 obj\n<< /Type /ObjStm[^>]*)>>", rb"99 0 obj << /A (\1%)\n>>", content, count=1)
    assert decoyed != content
    # When scanned, then the content counts once per page, past the ceiling
    assert inflation_failure(content, CEILING) == too_large(CEILING)
    assert inflation_failure(decoyed, CEILING) == too_large(CEILING)


@pytest.mark.slow
@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "content",
    [
        page(b"", b"BI " * 200_000),  # each `BI` searched 4 KB ahead for its `ID`: 53 s
        page(b"/Filter /FlateDecode", zlib.compress(b"BI " * 200_000)),  # the same, decoded: 50 s
        b"%PDF-1.7 " + b" stream" * 40_000,  # each keyword searched to the end for its line end: 40 s
    ],
    ids=["inline-image-starts", "inline-image-starts-compressed", "keywords-without-a-line-end"],
)
def test_shapes_that_once_cost_a_search_per_token_are_scanned_in_linear_time(content: bytes) -> None:
    assert inflation_failure(content, CEILING) is None


@pytest.mark.slow
@pytest.mark.timeout(30)
def test_objects_packed_by_the_megabyte_and_named_as_content_are_malformed_not_read_for_a_minute() -> None:
    # Given a 60 KB file whose object stream decodes to sixty arrays of a megabyte each, every one
    # named as a page's content (the budget grew with the decoded bytes: 98 s)
    kids = b" ".join(b"%d 0 R" % (200 + i) for i in range(60))
    packed = {1: CATALOG, 2: b"<< /Type /Pages /Kids [" + kids + b"] /Count 60 >>"}
    page_objects = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R >>"
    packed |= {200 + i: page_objects % (100 + i) for i in range(60)}
    packed |= {100 + i: b"[" + b"0 " * 500_000 + b"]" for i in range(60)}
    content = with_object_stream({4: b"<< >>"}, packed)
    assert len(content) < 100_000
    # When scanned, then it stops at its tokenizer budget
    failure = inflation_failure(content, 512 * CEILING)
    assert failure is not None and failure.reason is FailureReason.MALFORMED, failure


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_thousands_of_streams_that_break_late_are_salvaged_in_a_few_tries_each() -> None:
    # Given 5,000 streams, each a stored block of 1,000 bytes followed by an invalid block (each was
    # salvaged byte by byte: about 70 s for this file)
    stored = b"0 0 m\n" * 166
    data = b"\x78\x01\x00" + struct.pack("<HH", len(stored), len(stored) ^ 0xFFFF) + stored + b"\x07" + b"\x00" * 8
    one = b"1 0 obj << /Filter /FlateDecode /Length %d >>\nstream\n" % len(data) + data + b"\nendstream endobj\n"
    content = b"%PDF-1.7\n" + one * 5_000
    # When scanned, then what each inflates to before its error still counts: past a ceiling below it
    assert inflation_failure(content, 6 * 1024 * 1024) is None
    assert inflation_failure(content, 4 * 1024 * 1024) == too_large(4 * 1024 * 1024)


@pytest.mark.slow
def test_lzw_fed_megabytes_of_clear_codes_from_a_tiny_file_is_malformed() -> None:
    # Given 30 KB of Flate that inflates to 16 MiB of LZW clear codes (no output: Python's LZW reads
    # 3 MB a second, so a ceiling of 512 MiB of such input would take three minutes)
    clear_codes = int("100000000" * 8, 2).to_bytes(9, "big") * (16 * 1024 * 1024 // 9)
    content = page(b"/Filter [/FlateDecode /LZWDecode]", zlib.compress(clear_codes, 9))
    # When scanned, then it is refused as damaged, naming the limit
    failure = inflation_failure(content, 512 * CEILING)
    assert failure is not None and failure.reason is FailureReason.MALFORMED, failure
    assert "LZW" in failure.detail


@pytest.mark.parametrize("body", [b"9" * 5_000, b"[" + b"9" * 5_000 + b"]", b"<< /Length " + b"9" * 5_000 + b" >>"])
def test_a_number_thousands_of_digits_long_is_a_value_not_an_exception(body: bytes) -> None:
    # Given an object whose number has more digits than CPython converts (4,300)
    content = b"%PDF-1.7\n1 0 obj " + body + b"\nstream\nx\nendstream endobj\n"
    # When parsed, then the outcome is a value (the scan raised ValueError)
    assert isinstance(outcome(content), ExtractedDocument | ExtractionFailure)
    assert inflation_failure(content, CEILING) is None


def test_a_length_written_with_leading_zeros_delimits_the_stream() -> None:
    # Given a content stream whose compressed data contains "endstream" early and whose /Length is
    # written with thirty digits, most of them leading zeros (PDFium reads past them; the scan read a
    # number past twenty digits as nothing, and ended the stream at the first `endstream`)
    stored = b"\nendstream\n"
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = b"\x78\x01\x00" + struct.pack("<HH", len(stored), len(stored) ^ 0xFFFF) + stored
    data += deflater.compress(BOMB) + deflater.flush() + struct.pack(">I", zlib.adler32(stored + BOMB))
    stream = b"<< /Filter /FlateDecode /Length %030d >>\nstream\n" % len(data) + data + b"\nendstream"
    content = raw_pdf([CATALOG, PACKED_PAGE[2], PACKED_PAGE[3], stream, FONT])
    # When scanned, then the stream is counted to its real end
    assert inflation_failure(content, CEILING) == too_large(CEILING)
