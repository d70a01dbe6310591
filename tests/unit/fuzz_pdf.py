"""PDF seeds, and mutations that keep the container valid.

A random byte flip breaks a PDF's cross-reference table and PDFium reads it as repaired, or not at all.
These edits split the file into its objects, change them (duplicated, truncated, deleted; streams
re-encoded through LZW, ASCII85, ASCIIHex, run-length and Flate chains or damaged; page trees with odd
/Kids, fonts with broken ToUnicode maps, form fields and annotations with odd values, forms that draw
themselves), and write the file again with a cross-reference that points at every object: a table, a
stream over objects packed in (nested) object streams, or an incremental update. Some edits damage the
cross-reference on purpose (offsets shifted, none at all, a /Prev that loops).
"""

import base64
import io
import re
import struct
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

from tests.unit.fuzzing import MAX_MUTATED_BYTES, PDF_DATA, Edit, pick, public_files

# PDF seeds


@dataclass(frozen=True)
class PdfObjects:
    """A flat PDF as its numbered objects (each one's text between `N G obj` and `endobj`)."""

    objects: dict[int, bytes]
    root: int


_XREF_SUBSECTION = re.compile(rb"[\r\n ]*(\d+) (\d+)[ ]*\r?\n")
_XREF_ENTRY = re.compile(rb"(\d{10}) (\d{5}) ([nf])[ \r\n]{1,2}")
_OBJECT_HEADER = re.compile(rb"\s*(\d+)\s+(\d+)\s+obj\b")
_ROOT = re.compile(rb"/Root\s+(\d+)\s+\d+\s+R")


def _split_by_table(content: bytes) -> PdfObjects | None:
    """The objects of a file with one classic cross-reference table (as raw_pdf, fpdf2 and pypdf write)."""
    start = content.rfind(b"startxref")
    found = re.match(rb"startxref\s+(\d+)", content[start:]) if start >= 0 else None
    if found is None or not content.startswith(b"xref", int(found[1])):
        return None
    table_at = int(found[1])
    position, offsets = table_at + 4, {}
    while (subsection := _XREF_SUBSECTION.match(content, position)) is not None:
        first, count = int(subsection[1]), int(subsection[2])
        position = subsection.end()
        for number in range(first, first + count):
            entry = _XREF_ENTRY.match(content, position)
            if entry is None:
                return None
            position = entry.end()
            if entry[3] == b"n":
                offsets[number] = int(entry[1])
    root = _ROOT.search(content, position)
    if root is None or not offsets:
        return None
    bounds = sorted({*offsets.values(), table_at})
    objects: dict[int, bytes] = {}
    for number, offset in sorted(offsets.items(), key=lambda item: item[1]):
        text = content[offset : bounds[bounds.index(offset) + 1]]
        header = _OBJECT_HEADER.match(text)
        end = text.rfind(b"endobj")
        if header is None or int(header[1]) != number or end < 0:
            return None
        objects[number] = text[header.end() : end].strip(b"\r\n ") + b"\n"
    return PdfObjects(objects, int(root[1]))


def _normalised(content: bytes) -> bytes | None:
    """The same document written again by pypdf: every object at top level, one classic table."""
    from pypdf import PdfReader, PdfWriter

    try:
        reader = PdfReader(io.BytesIO(content))
        if reader.is_encrypted:
            return None
        buffer = io.BytesIO()
        PdfWriter(clone_from=reader).write(buffer)
    except Exception:  # a seed pypdf cannot rewrite is left out, not fuzzed
        return None
    return buffer.getvalue()


@cache
def split_pdf(content: bytes) -> PdfObjects | None:
    found = _split_by_table(content)
    if found is None:
        flat = _normalised(content)
        found = _split_by_table(flat) if flat is not None else None
    return found


def tree_pdf() -> bytes:
    """Three pages under a two-level page tree; a font with a ToUnicode map; content through ASCII85,
    LZW and Flate; a comment and an annotation with text."""
    from shared.local.hostile_corpus import raw_pdf

    cmap = (
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Fuzz def /CMapType 2 def\n"
        b"1 begincodespacerange <00> <FF> endcodespacerange\n2 beginbfchar <41> <0041> <42> <00DF> endbfchar\n"
        b"1 beginbfrange <61> <7A> <0061> endbfrange\nendcmap CMapName currentdict /CMap defineresource pop end end"
    )
    texts = [b"BT /F1 14 Tf 72 720 Td (Page %d of the tree, drawn in Helvetica ABab) Tj ET" % n for n in (1, 2, 3)]
    streams = [
        encoded_stream(b"", texts[0], ("ASCII85Decode", "FlateDecode")),
        encoded_stream(b"", texts[1], ("LZWDecode",)),
        b"<< /Length %d >>\nstream\n" % len(texts[2]) + texts[2] + b"\nendstream",
    ]
    page = b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources 11 0 R%s >>"
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 3 >>",
            b"<< /Type /Pages /Parent 2 0 R /Kids [5 0 R 6 0 R] /Count 2 >>",
            page % (2, 9, b" /Annots [12 0 R 13 0 R]"),
            page % (3, 7, b""),
            page % (3, 8, b""),
            *streams[:2],
            streams[2],
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 14 0 R >>",
            b"<< /Font << /F1 10 0 R >> >>",
            b"<< /Type /Annot /Subtype /Text /Rect [400 700 420 720] /Contents (A sticky note on page three) >>",
            b"<< /Type /Annot /Subtype /FreeText /Rect [72 100 300 130] /Contents (Typed onto the page)"
            b" /DA (/F1 12 Tf) >>",
            b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream",
        ]
    )


@cache
def generated_pdf_seeds() -> tuple[bytes, ...]:
    from tests.builders.pdf import checkbox, form_pdf, page_with_text, report_pdf, table_pdf, text_field

    form = form_pdf(
        [
            text_field(b"Full name", b"Jane Doe"),
            checkbox(b"Agree", checked=True),
            b"<< /Type /Annot /Subtype /Text /Rect [400 700 420 720] /Contents (Check the date) >>",
        ],
        content=b"BT /F1 12 Tf 72 750 Td (Application form for the fuzz test) Tj ET",
    )
    return (report_pdf(blank_second_page=True), table_pdf(), page_with_text(0), form, tree_pdf())


@cache
def public_pdf_seeds() -> tuple[bytes, ...]:
    return tuple(seed for seed in public_files(PDF_DATA, "pdf") if split_pdf(seed) is not None)


# ---------------------------------------------------------------------------------------------------
# Stream encodings


def _lzw(data: bytes) -> bytes:
    from tests.builders.pdf import lzw

    return lzw(data)


def _run_length(data: bytes) -> bytes:
    from tests.builders.pdf import run_length

    return run_length(data)


ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "FlateDecode": zlib.compress,
    "Fl": zlib.compress,
    "LZWDecode": _lzw,
    "LZW": _lzw,
    "ASCII85Decode": lambda data: base64.a85encode(data) + b"~>",
    "A85": lambda data: base64.a85encode(data) + b"~>",
    "ASCIIHexDecode": lambda data: data.hex().encode() + b">",
    "AHx": lambda data: data.hex().encode() + b">",
    "RunLengthDecode": _run_length,
}
CHAINS: tuple[tuple[str, ...], ...] = (
    ("FlateDecode",), ("LZWDecode",), ("ASCII85Decode",), ("ASCIIHexDecode",), ("RunLengthDecode",),
    ("ASCII85Decode", "FlateDecode"), ("ASCIIHexDecode", "FlateDecode"), ("ASCII85Decode", "LZWDecode"),
    ("LZWDecode", "FlateDecode"), ("FlateDecode", "FlateDecode"), ("ASCII85Decode", "LZWDecode", "FlateDecode"),
    ("ASCIIHexDecode", "ASCII85Decode", "FlateDecode"), ("RunLengthDecode", "FlateDecode"), ("A85", "Fl"),
    ("AHx", "LZW"), ("FlateDecode",) * 8, ("ASCII85Decode", "FlateDecode", "LZWDecode"),
)  # fmt: skip


def encoded(data: bytes, chain: tuple[str, ...]) -> bytes:
    """`data` as a stream with filter `chain` stores it (the first filter is the outermost encoding)."""
    for name in reversed(chain):
        data = ENCODERS[name](data)
    return data


def encoded_stream(dictionary: bytes, data: bytes, chain: tuple[str, ...]) -> bytes:
    stored = encoded(data, chain)
    filters = b" ".join(b"/" + name.encode() for name in chain)
    return b"<< %s /Filter [%s] /Length %d >>\nstream\n" % (dictionary, filters, len(stored)) + stored + b"\nendstream"


_STREAM_START = re.compile(rb">>\s*stream(?:\r\n|\n|\r)")
_FILTER = re.compile(rb"/Filter\s*(\[[^\]]*\]|/[^\s/\[\]<>()]+)")
_LENGTH = re.compile(rb"/Length\s+\d+(?:\s+\d+\s+R)?")
_FLATE_NAMES = (b"[/FlateDecode]", b"/FlateDecode", b"/Fl", b"[/Fl]")


@dataclass(frozen=True)
class Stream:
    dictionary: bytes  # `<< … >>`
    data: bytes


def as_stream(body: bytes) -> Stream | None:
    start = _STREAM_START.search(body)
    end = body.rfind(b"endstream")
    if start is None or end < start.end():
        return None
    data = body[start.end() : end]
    data = data[:-2] if data.endswith(b"\r\n") else data[:-1] if data.endswith((b"\n", b"\r")) else data
    return Stream(body[: start.start() + 2], data)


def stream_body(dictionary: bytes, data: bytes, *, length: int | None = None) -> bytes:
    """A stream object's body with `/Length` set to the data's (or to `length`)."""
    dictionary = _LENGTH.sub(b"", dictionary).rstrip()
    entry = b" /Length %d" % (len(data) if length is None else length)
    return dictionary[:-2].rstrip() + entry + b" >>\nstream\n" + data + b"\nendstream\n"


def decoded(stream: Stream) -> bytes | None:
    """The stream's data decoded, where it is plain or Flate without parameters; None otherwise."""
    filters = _FILTER.search(stream.dictionary)
    if filters is None:
        return stream.data
    if b"/DecodeParms" in stream.dictionary or b" ".join(filters[1].split()) not in _FLATE_NAMES:
        return None
    inflater = zlib.decompressobj()
    try:
        return inflater.decompress(stream.data, 16 * 1024 * 1024)
    except zlib.error:
        return None


# ---------------------------------------------------------------------------------------------------
# PDF mutations


PDF_OPERATIONS = frozenset(
    {
        "duplicate_object", "truncate_object", "delete_object", "reencode_stream", "damage_stream", "stream_length",
        "kids", "page_types", "count", "tounicode", "acroform", "number", "reference", "name", "mediabox", "contents",
        "form_loop", "pack", "xref_shift", "xref_none", "xref_stream", "incremental", "content_operators",
    }
)  # fmt: skip
PDF_NUMBERS = (
    b"0", b"-1", b"1", b"2147483647", b"2147483648", b"-2147483649", b"4294967296", b"99999999999999999999",
    b"1e30", b"-0.0", b"3.4e38", b".5", b"-.", b"1.2.3", b"+-1", b"00000000000000000000001", b"nan", b"(7)",
    b"/7", b"null", b"[]",
)  # fmt: skip
PDF_NAMES = (
    b"/Page", b"/Pages", b"/Font", b"/XObject", b"/Image", b"/Form", b"/Catalog", b"/ObjStm", b"/XRef",
    b"/FlateDecode", b"/LZWDecode", b"/Type", b"/Kids", b"/Parent", b"/Contents", b"/Resources", b"/Annots",
    b"/Encrypt", b"/Length", b"/", b"/#00", b"/a#20b", b"/" + b"N" * 1000, b"/Widget", b"/Identity-H",
)  # fmt: skip
BOXES = (
    b"[0 0 0 0]", b"[0 0 1e30 1e30]", b"[612 792 0 0]", b"[0 0 -612 -792]", b"[/a 0 612 792]", b"[0 0 612]", b"[]",
    b"[0 0 612 792 5 5]", b"[-1e30 -1e30 1e30 1e30]", b"[0 0 14400 14400]", b"[0.0001 0 0.0002 0.0001]",
    b"3 0 R", b"(box)", b"[0 0 612 792]",
)  # fmt: skip
_CMAP_HEAD = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /Fuzz def /CMapType 2 def\n"
_CMAP_TAIL = b"endcmap CMapName currentdict /CMap defineresource pop end end\n"
_ONE_BYTE = b"1 begincodespacerange <00> <FF> endcodespacerange\n"
BROKEN_CMAPS = (
    _ONE_BYTE + b"1 beginbfrange <00> <FF> <0041> endbfrange\n",
    _ONE_BYTE + b"1 beginbfrange <20> <7E> [<0041> <0042>] endbfrange\n",
    _ONE_BYTE + b"1 beginbfrange <00> <FF> [" + b"<0041> " * 300 + b"] endbfrange\n",
    _ONE_BYTE + b"1 beginbfchar <41> <D800> endbfchar\n",
    _ONE_BYTE + b"1 beginbfchar <41> <DFFFD800> endbfchar\n",
    _ONE_BYTE + b"1 beginbfchar <4> <00410042004> endbfchar\n",
    _ONE_BYTE + b"1 beginbfchar <41> <" + b"0041" * 5000 + b"> endbfchar\n",
    _ONE_BYTE + b"100 beginbfchar <41> <0042> endbfchar\n",
    _ONE_BYTE + b"1 beginbfchar <41> <0042>\n",
    b"1 begincodespacerange <00000000> <FFFFFFFF> endcodespacerange\n"
    b"1 beginbfrange <00000000> <FFFFFFFF> <0000> endbfrange\n",
    b"1 begincodespacerange <FF> <00> endcodespacerange\n1 beginbfchar <41> <0061> endbfchar\n",
    _ONE_BYTE + b"1 beginbfrange <FF> <00> <0041> endbfrange\n",
    _ONE_BYTE + b"1 beginbfrange <00> <FF> <FFFF> endbfrange\n",
    _ONE_BYTE + b"1 beginbfrange <0000> <FFFF> <0041> endbfrange\n",
    b"/Identity-H usecmap\n" + _ONE_BYTE,
    b"/Nonexistent usecmap\n",
    _ONE_BYTE + b"1 begincidrange <00> <FF> 99999999 endcidrange\n",
    _ONE_BYTE + b"beginbfchar " * 50 + b"\n",
    _ONE_BYTE + b"2147483647 beginbfrange <00> <01> <0041> endbfrange\n",
    _ONE_BYTE + b"1 beginbfchar <41> (text string) endbfchar 1 beginbfchar /Name 12 endbfchar\n",
    b"",
    b"\x00\xff not a cmap at all",
    b"begincmap " * 1000,
)
FIELD_TYPES = (b"/Tx", b"/Btn", b"/Ch", b"/Sig", b"/Bogus", b"(Tx)", b"5", b"null")
FIELD_VALUES = (
    b"(" + b"v" * 20_000 + b")", b"42", b"/Name", b"[(a) (b)]", b"<< /A 1 >>", b"<FEFF00>", b"(\\\\(unbalanced)",
    b"<FEFFD800>", b"()", b"null", b"true", b"(\\000\\001)", b"<" + b"00" * 1000 + b">", b"3 0 R", b"99999 0 R",
    b"-1.5", b"(Jane Doe)", b"/Yes", b"/Off",
)  # fmt: skip
FIELD_NAMES = (b"(Name)", b"(a.b.c.d.e)", b"(" + b"n" * 5000 + b")", b"()", b"<FEFF>", b"/Name", b"7", b"<FEFFD800>")
FIELD_FLAGS = (b"0", b"-1", b"2147483647", b"4294967295", b"8192", b"65536", b"49152", b"131072", b"(x)", b"1e40")
RECTS = (
    b"[100 700 300 720]", b"[0 0]", b"[1e40 1e40 -1e40 -1e40]", b"[300 720 100 700]", b"(rect)", b"[0 0 0 0]",
    b"[/a /b /c /d]", b"[nan 0 1 1]", b"[0 0 612 792]", b"[-100000 -100000 100000 100000]",
)  # fmt: skip


@dataclass
class PdfLayout:
    """How the objects are written back: which are packed into object streams, how the cross-reference
    is written (and damaged), and which numbers are defined twice."""

    packed: list[list[int]] = field(default_factory=list)
    packing_chain: tuple[str, ...] = ()
    nested_lengths: bool = False
    xref: str = "table"  # "table", "stream" or "none"
    shifted: dict[int, int] = field(default_factory=dict)  # object number -> bytes its entry is off by
    duplicates: list[tuple[int, bytes]] = field(default_factory=list)
    prefer_duplicates: bool = False
    incremental: bool = False
    previous: str = "right"  # where an incremental update's /Prev points: "right", "itself", "nowhere"


class _Pdf:
    """The objects being mutated, with what the edits need to find in them."""

    def __init__(self, source: PdfObjects) -> None:
        self.objects = dict(source.objects)
        self.root = source.root
        self.layout = PdfLayout()

    def new(self, body: bytes) -> int:
        number = max(self.objects, default=0) + 1
        self.objects[number] = body
        return number

    def numbers(self, pattern: bytes = b"") -> list[int]:
        return [number for number, body in sorted(self.objects.items()) if re.search(pattern, _head(body))]

    def pages(self) -> list[int]:
        return self.numbers(rb"/Type\s*/Page(?![A-Za-z])")

    def page_tree(self) -> int | None:
        found = re.search(rb"/Pages\s+(\d+)\s+\d+\s+R", self.objects.get(self.root, b""))
        return int(found[1]) if found and int(found[1]) in self.objects else None

    def extended(self, number: int, entries: bytes) -> None:
        """`entries` added at the end of an object's dictionary (a repeated key: the last one wins)."""
        body = self.objects[number]
        stream = as_stream(body)
        if stream is not None:
            self.objects[number] = stream_body(stream.dictionary[:-2] + b" " + entries + b" >>", stream.data)
        elif body.rstrip().endswith(b">>"):
            self.objects[number] = body.rstrip()[:-2] + b" " + entries + b" >>\n"


def _head(body: bytes) -> bytes:
    """An object's dictionary: everything before its stream data."""
    start = _STREAM_START.search(body)
    return body[: start.start() + 2] if start else body


def mutate_pdf(seed: bytes, changes: list[Edit]) -> bytes:
    """The seed's objects with each edit applied in turn, written again with a cross-reference that
    points at them (unless an edit damages it on purpose)."""
    source = split_pdf(seed)
    assert source is not None, "a seed must be a flat PDF"
    pdf = _Pdf(source)
    for change in changes:
        if sum(len(body) for body in pdf.objects.values()) > MAX_MUTATED_BYTES:
            break  # edits that repeat what earlier ones repeated grow without bound: it is big enough
        _PDF_EDITS[change.operation](pdf, change)
    return written(pdf.objects, pdf.root, pdf.layout)


def _any_object(pdf: _Pdf, change: Edit) -> int | None:
    numbers = sorted(pdf.objects)
    return pick(numbers, change.target) if numbers else None


def _duplicate_object(pdf: _Pdf, change: Edit) -> None:
    number = _any_object(pdf, change)
    if number is None:
        return
    choice = change.value % 3
    body = pdf.objects[number]
    if choice == 1:
        body = pdf.objects[pick(sorted(pdf.objects), change.part)]
    elif choice == 2:
        body = body[: change.part % (len(body) + 1)]
    pdf.layout.duplicates.append((number, body))
    pdf.layout.prefer_duplicates = bool(change.value % 2)


def _truncate_object(pdf: _Pdf, change: Edit) -> None:
    number = _any_object(pdf, change)
    if number is not None:
        body = pdf.objects[number]
        pdf.objects[number] = body[: change.value % (len(body) + 1)]


def _delete_object(pdf: _Pdf, change: Edit) -> None:
    number = _any_object(pdf, change)
    if number is not None and number != pdf.root:
        del pdf.objects[number]


def _streams(pdf: _Pdf) -> list[int]:
    return [number for number, body in sorted(pdf.objects.items()) if as_stream(body) is not None]


def _reencode_stream(pdf: _Pdf, change: Edit) -> None:
    """A stream decoded and stored again through another filter chain (Flate, LZW, ASCII85, …)."""
    streams = _streams(pdf)
    if not streams:
        return
    number = pick(streams, change.target)
    stream = as_stream(pdf.objects[number])
    data = decoded(stream) if stream is not None else None
    if stream is None or data is None:
        return
    chain = pick(CHAINS, change.value)
    dictionary = _FILTER.sub(b"", stream.dictionary)
    filters = b" ".join(b"/" + name.encode() for name in chain)
    dictionary = dictionary[:-2].rstrip() + b" /Filter [" + filters + b"] >>"
    pdf.objects[number] = stream_body(dictionary, encoded(data, chain))


def _damage_stream(pdf: _Pdf, change: Edit) -> None:
    """A stream's data cut short, with junk after it, or with a byte changed; its /Length kept right
    (the container stays valid) or left as it was."""
    streams = _streams(pdf)
    if not streams:
        return
    number = pick(streams, change.target)
    stream = as_stream(pdf.objects[number])
    if stream is None:
        return
    data = stream.data
    choice = change.value % 4
    if choice == 0:
        data = data[: change.part % (len(data) + 1)]
    elif choice == 1:
        data += pick(
            (b"garbage", b"~>", b">", b"\x00" * 100, b"endstream", zlib.compress(b"0 0 m " * 1000)), change.part
        )
    elif data:
        at = change.part % len(data)
        data = data[:at] + bytes([data[at] ^ (1 + change.value % 255)]) + data[at + 1 :]
    stale = change.value % 8 >= 6
    pdf.objects[number] = stream_body(stream.dictionary, data, length=len(stream.data) if stale else None)


def _stream_length(pdf: _Pdf, change: Edit) -> None:
    streams = _streams(pdf)
    if not streams:
        return
    number = pick(streams, change.target)
    stream = as_stream(pdf.objects[number])
    if stream is None:
        return
    lengths = (b"0", b"-1", b"2147483647", b"99999 0 R", b"%d 0 R" % number, b"%d" % (len(stream.data) // 2), b"(9)")
    dictionary = _LENGTH.sub(b"", stream.dictionary)
    pdf.objects[number] = (
        dictionary[:-2].rstrip() + b" /Length " + pick(lengths, change.value) + b" >>\nstream\n" + stream.data
    ) + b"\nendstream\n"


def repeated(item: bytes, times: int) -> bytes:
    """`item` `times` over, space-separated, at most about a megabyte of it."""
    return b" ".join([item] * min(times, max(1, 1024 * 1024 // (len(item) + 1))))


def _set_entry(pdf: _Pdf, number: int, key: bytes, value: bytes) -> None:
    """`/key value` in an object's dictionary, replacing a simple value or an array if there is one."""
    body = pdf.objects[number]
    pattern = re.compile(rb"/" + key + rb"(?![A-Za-z])\s*(\[[^\]]*\]|\d+\s+\d+\s+R|[^\s/\[\]<>()]+)?")
    head = _head(body)
    found = pattern.search(head)
    if found is not None and found[1] is None:  # a dictionary value: the entry is given again, after it
        pdf.extended(number, b"/" + key + b" " + value)
    elif found is not None:
        pdf.objects[number] = pattern.sub(lambda _: b"/" + key + b" " + value, head, count=1) + body[len(head) :]
    else:
        pdf.extended(number, b"/" + key + b" " + value)


def _kids(pdf: _Pdf, change: Edit) -> None:
    """A page tree whose /Kids is empty, itself, missing, repeated, not pages, very deep, not an array,
    mixed, or a loop through another node."""
    tree = pdf.page_tree()
    if tree is None:
        return
    original = re.search(rb"/Kids\s*\[([^\]]*)\]", pdf.objects[tree])
    kids = original[1] if original else b""
    pages = pdf.pages()
    variants: tuple[Callable[[], bytes], ...] = (
        lambda: b"[]",
        lambda: b"[%d 0 R]" % tree,
        lambda: b"[99999 0 R]",
        lambda: b"[" + repeated(kids, pick((2, 10, 500, 3000), change.part)) + b"]",
        lambda: b"[%d 0 R]" % pick([pdf.root, *sorted(pdf.objects)], change.part),
        lambda: _deep_tree(pdf, kids, pick((2, 10, 100, 1000), change.part)),
        lambda: pick((b"%d 0 R" % pages[0] if pages else b"null", b"(kids)", b"<< >>", b"null", b"5"), change.part),
        lambda: b"[" + kids + b" 42 /Name (x) null [3 0 R] << /Type /Page >>]",
        lambda: b"[" + kids + b" %d 0 R]" % pdf.new(b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>\n" % tree),
    )
    _set_entry(pdf, tree, b"Kids", pick(variants, change.value)())


def _deep_tree(pdf: _Pdf, kids: bytes, depth: int) -> bytes:
    """`kids` under a chain of `depth` page tree nodes, one inside the other."""
    inner = b"[" + kids + b"]"
    for _ in range(depth):
        inner = b"[%d 0 R]" % pdf.new(b"<< /Type /Pages /Kids " + inner + b" /Count 1 >>\n")
    return inner


def _page_types(pdf: _Pdf, change: Edit) -> None:
    """A page that lists kids of its own (itself, another page), or pages and their node swapping types."""
    tree, pages = pdf.page_tree(), pdf.pages()
    if tree is None or not pages:
        return
    if change.value % 2:
        _set_entry(pdf, pick(pages, change.part), b"Kids", b"[%d 0 R]" % pick(pages, change.target))
        return
    for number in pages:
        _set_entry(pdf, number, b"Type", b"/Pages")
    _set_entry(pdf, tree, b"Type", b"/Page")


def _count(pdf: _Pdf, change: Edit) -> None:
    nodes = pdf.numbers(rb"/Type\s*/Pages")
    if nodes:
        counts = (b"0", b"-1", b"2147483647", b"1e10", b"3.7", b"(x)", b"99999", b"2", b"null")
        _set_entry(pdf, pick(nodes, change.target), b"Count", pick(counts, change.value))


def broken_cmap(change: Edit) -> bytes:
    body = pick(BROKEN_CMAPS, change.value)
    cmap = body if change.part % 5 == 4 else _CMAP_HEAD + body + _CMAP_TAIL
    return cmap[: change.part % (len(cmap) + 1)] if change.part % 7 == 6 else cmap


def _tounicode(pdf: _Pdf, change: Edit) -> None:
    """A font given a broken ToUnicode map (ranges past the codespace, lone surrogates, counts that lie,
    maps that never end), sometimes stored through a filter chain."""
    fonts = pdf.numbers(rb"/Type\s*/Font")
    if not fonts:
        return
    cmap = broken_cmap(change)
    chain = pick(((), *CHAINS), change.part // 3)
    cmap_object = encoded_stream(b"", cmap, chain) if chain else stream_body(b"<< >>", cmap)
    _set_entry(pdf, pick(fonts, change.target), b"ToUnicode", b"%d 0 R" % pdf.new(cmap_object))


def _field(pdf: _Pdf, page: int, value: int, extra: bytes = b"") -> bytes:
    return b"<< /Type /Annot /Subtype /Widget /P %d 0 R /FT %s /T %s /V %s /Rect %s /Ff %s /F %s %s >>\n" % (
        page,
        pick(FIELD_TYPES, value),
        pick(FIELD_NAMES, value // 3),
        pick(FIELD_VALUES, value // 5),
        pick(RECTS, value // 7),
        pick(FIELD_FLAGS, value // 11),
        pick((b"4", b"0", b"2", b"32", b"-1"), value // 13),
        extra,
    )


def _acroform(pdf: _Pdf, change: Edit) -> None:
    """Form fields and annotations with odd values on a page: the wrong types, huge or missing values and
    names, boxes that are not boxes, kids that loop, far more annotations than a page is read for."""
    pages = pdf.pages()
    if not pages:
        return
    page = pick(pages, change.target)
    shape = change.value % 7
    fields: list[int] = []
    if shape == 0:  # a few plain fields
        fields = [pdf.new(_field(pdf, page, change.value // 7 + i * 31)) for i in range(1 + change.part % 4)]
    elif shape == 1:  # a field that is its own kid
        number = pdf.new(b"")
        pdf.objects[number] = _field(pdf, page, change.part, b"/Kids [%d 0 R]" % number)
        fields = [number]
    elif shape == 2:  # a kid whose parent is itself
        number = pdf.new(b"")
        pdf.objects[number] = _field(pdf, page, change.part, b"/Parent %d 0 R" % number)
        fields = [number]
    elif shape == 3:  # a chain of parents a hundred deep
        parent = pdf.new(b"<< /FT /Tx /T (root) /V (deep value) >>\n")
        for _ in range(100):
            parent = pdf.new(b"<< /T (level) /Parent %d 0 R >>\n" % parent)
        fields = [pdf.new(_field(pdf, page, change.part, b"/Parent %d 0 R" % parent))]
    elif shape == 4:  # more annotations than a page is read for
        fields = [pdf.new(_field(pdf, page, i)) for i in range(400)]
    elif shape == 5:  # comments: huge, empty, a popup that loops
        note = pdf.new(b"<< /Type /Annot /Subtype /Text /Rect [1 1 2 2] /Contents (" + b"c" * 50_000 + b") >>\n")
        popup = pdf.new(b"")
        pdf.objects[popup] = b"<< /Type /Annot /Subtype /Popup /Parent %d 0 R /Rect %s >>\n" % (
            popup,
            pick(RECTS, change.part),
        )
        free = pdf.new(b"<< /Type /Annot /Subtype /FreeText /Rect %s /Contents %s >>\n" % (
            pick(RECTS, change.part // 3), pick(FIELD_VALUES, change.part // 5)))  # fmt: skip
        fields = [note, popup, free]
    else:  # the form and the annotations that are not arrays
        pdf.extended(pdf.root, b"/AcroForm << /Fields (none) >>")
        pdf.extended(page, b"/Annots %s" % pick((b"5", b"(x)", b"<< >>", b"99999 0 R"), change.part))
        return
    references = b" ".join(b"%d 0 R" % number for number in fields)
    pdf.extended(page, b"/Annots [" + references + b"]")
    pdf.extended(pdf.root, b"/AcroForm << /Fields [" + references + b"] /NeedAppearances true >>")


_NUMBER_TOKEN = re.compile(rb"(?<![A-Za-z0-9#/.+-])[+-]?\d+(?:\.\d*)?(?![A-Za-z0-9.])")
_REFERENCE_TOKEN = re.compile(rb"\d+\s+\d+\s+R(?![A-Za-z])")
_NAME_TOKEN = re.compile(rb"/[A-Za-z][A-Za-z0-9]*")


def _replace_token(pdf: _Pdf, change: Edit, pattern: re.Pattern[bytes], values: Sequence[bytes]) -> None:
    candidates = [
        (number, match) for number in sorted(pdf.objects) for match in pattern.finditer(_head(pdf.objects[number]))
    ]
    if not candidates:
        return
    number, match = pick(candidates, change.target)
    body = pdf.objects[number]
    pdf.objects[number] = body[: match.start()] + pick(values, change.value) + body[match.end() :]


def _number(pdf: _Pdf, change: Edit) -> None:
    _replace_token(pdf, change, _NUMBER_TOKEN, PDF_NUMBERS)


def _reference(pdf: _Pdf, change: Edit) -> None:
    numbers = sorted(pdf.objects)
    targets = [b"99999 0 R", b"0 0 R", b"%d 0 R" % pdf.root, b"1 65535 R", b"-1 0 R"]
    targets += [b"%d 0 R" % pick(numbers, change.part)]
    _replace_token(pdf, change, _REFERENCE_TOKEN, targets)


def _name(pdf: _Pdf, change: Edit) -> None:
    _replace_token(pdf, change, _NAME_TOKEN, PDF_NAMES)


def _mediabox(pdf: _Pdf, change: Edit) -> None:
    pages = pdf.pages()
    if not pages:
        return
    page = pick(pages, change.target)
    key = pick((b"MediaBox", b"CropBox", b"Rotate", b"UserUnit"), change.value)
    if key in {b"Rotate", b"UserUnit"}:
        value = pick((b"45", b"-90", b"1e9", b"270", b"0", b"-1", b"(x)"), change.part)
    else:
        value = pick(BOXES, change.part)
    _set_entry(pdf, page, key, value)


def _contents(pdf: _Pdf, change: Edit) -> None:
    """A page's /Contents repeated thousands of times, empty, itself, nested, or not a stream at all."""
    pages = pdf.pages()
    if not pages:
        return
    page = pick(pages, change.target)
    found = re.search(rb"/Contents\s*(\d+\s+\d+\s+R|\[[^\]]*\])", pdf.objects[page])
    current = found[1].strip(b"[]") if found else b""
    value = pick(
        (
            b"[" + repeated(current, pick((2, 100, 2000), change.part)) + b"]",
            b"[]",
            b"%d 0 R" % page,
            b"[[" + current + b"]]",
            b"null",
            b"%d 0 R" % pdf.root,
            b"99999 0 R",
            b"(BT /F1 12 Tf (x) Tj ET)",
        ),
        change.value,
    )
    _set_entry(pdf, page, b"Contents", value)


def _form_loop(pdf: _Pdf, change: Edit) -> None:
    """A form XObject that draws itself (or two that draw each other), drawn by a page."""
    pages, fonts = pdf.pages(), pdf.numbers(rb"/Type\s*/Font")
    if not pages:
        return
    page = pick(pages, change.target)
    font = b" /Font << /F1 %d 0 R >>" % fonts[0] if fonts else b""
    first, second = pdf.new(b""), pdf.new(b"")
    drawing = b"BT /F1 12 Tf 72 600 Td (Drawn by a form) Tj ET /Fm Do"
    for this, other in ((first, second if change.value % 2 else first), (second, first)):
        resources = b"/Resources << /XObject << /Fm %d 0 R >>%s >>" % (other, font)
        dictionary = b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] " + resources + b" >>"
        pdf.objects[this] = stream_body(dictionary, drawing)
    found = re.search(rb"/Contents\s*(\d+\s+\d+\s+R|\[[^\]]*\])", pdf.objects[page])
    current = found[1].strip(b"[]") if found else b""
    drawn = pdf.new(stream_body(b"<< >>", b"q /Fm Do Q"))
    _set_entry(pdf, page, b"Contents", b"[" + current + b" %d 0 R]" % drawn)
    _set_entry(pdf, page, b"Resources", b"<< /XObject << /Fm %d 0 R >>%s >>" % (first, font))


def _pack(pdf: _Pdf, change: Edit) -> None:
    """Objects moved into one to three object streams, stored through a filter chain; nested: each
    stream's /Length kept in the stream before it."""
    candidates = [number for number, body in sorted(pdf.objects.items()) if as_stream(body) is None]
    if not candidates:
        return
    groups = 1 + change.value % 3
    chosen = [number for index, number in enumerate(candidates) if (change.target >> (index % 16)) & 1 or groups > 1]
    if not chosen:
        chosen = candidates
    pdf.layout.packed = [chosen[index::groups] for index in range(groups) if chosen[index::groups]]
    pdf.layout.packing_chain = pick(((), *CHAINS), change.part)
    pdf.layout.nested_lengths = bool(change.value % 2)
    pdf.layout.xref = "stream"


def _xref_shift(pdf: _Pdf, change: Edit) -> None:
    numbers = sorted(pdf.objects)
    for index in range(1 + change.value % 4):
        pdf.layout.shifted[pick(numbers, change.target + index)] = pick((1, -1, 7, -20, 1000, 10**6), change.part)


def _xref_none(pdf: _Pdf, change: Edit) -> None:
    pdf.layout.xref = "none"


def _xref_stream(pdf: _Pdf, change: Edit) -> None:
    pdf.layout.xref = "stream"


def _incremental(pdf: _Pdf, change: Edit) -> None:
    """A second revision appended, redefining an object, whose /Prev is right, itself, or nowhere."""
    _duplicate_object(pdf, change)
    pdf.layout.incremental = True
    pdf.layout.previous = pick(("right", "itself", "nowhere"), change.part)


def aligned_grid(rows: int, columns: int, *, font: bytes = b"/F1") -> bytes:
    """Short cells in aligned columns: the evidence the PDF parser recovers a table from."""
    cells = (
        b"BT %s 4 Tf %d %d Td (c%d) Tj ET" % (font, 10 + 14 * column, 760 - 8 * row, column)
        for row in range(rows)
        for column in range(columns)
    )
    return b"\n".join(cells)


# Text shown where no page is, at no size or a huge one, through matrices that collapse or overflow,
# thousands of lines, a grid of aligned cells wider than the column limit.
CONTENT_OPERATORS = (
    b"BT %s 1e30 Tf 0 0 Td (huge font) Tj ET",
    b"BT %s 12 Tf 1e30 0 0 1e30 0 0 Tm (huge matrix) Tj ET",
    b"BT %s 12 Tf 1e38 1e38 Td (far away) Tj ET",
    b"BT %s -12 Tf 72 700 Td (negative size) Tj ET",
    b"BT %s 0 Tf 72 700 Td (zero size text) Tj ET",
    b"BT %s 12 Tf 0 0 0 0 0 0 Tm (degenerate matrix) Tj ET",
    b"1e30 0 0 1e30 0 0 cm BT %s 12 Tf (scaled past floats) Tj ET",
    b"BT %s 12 Tf 72 700 Td 1e30 Tz (stretched) Tj ET",
    b"BT %s 12 Tf 72 -5000 Td (below the page) Tj ET",
    b"BT %s 12 Tf -5000 700 Td (left of the page) Tj ET",
    b"BT %s 12 Tf 72 700 Td [(kern) -1e30 (ed)] TJ ET",
    b"BT %s 12 Tf 72 700 Td (" + b"A" * 20_000 + b") Tj ET",
    b"BT %s 12 Tf 14 TL 72 700 Td" + b" (line) Tj T*" * 3_000 + b" ET",
    b"BT " * 500 + b"%s 12 Tf (never ended) Tj",
    b"q " * 10_000 + b"BT %s 12 Tf (deep saves) Tj ET",
    b"BT /Missing 12 Tf 72 700 Td (missing font%s) Tj ET",
    b"BT %s 12 Tf 72 700 Td <00ff00fe0d0a> Tj ET",
    b"BT %s 12 Tf 3 Tr 72 700 Td (invisible) Tj ET",
    b"BT %s 12 Tf 0 1 -1 0 300 300 Tm (rotated a quarter) Tj ET",
    b"BT %s 12 Tf 72 700 Td 100 TL (a) ' 1 2 (b) \" ET",
    b"BT %s 12 Tf nan nan Td (not a number) Tj ET",
    b"BT %s 12 Tf 72 700 Td (\r\n\f\b\000 control) Tj ET",
)


def _page_font(pdf: _Pdf, page: int) -> bytes:
    """The name of a font the page's resources define (/F1 when it cannot tell)."""
    body = pdf.objects[page]
    indirect = re.search(rb"/Resources\s+(\d+)\s+\d+\s+R", body)
    resources = pdf.objects.get(int(indirect[1]), b"") if indirect else body
    named = re.search(rb"/Font\s*<<\s*(/[^\s/<>\[\]()]+)", resources)
    return named[1] if named else b"/F1"


def _content_operators(pdf: _Pdf, change: Edit) -> None:
    """A page drawing hostile text after its own: a stream added to its /Contents, plain or encoded."""
    pages = pdf.pages()
    if not pages:
        return
    page = pick(pages, change.target)
    font = _page_font(pdf, page)
    choice = change.value % (len(CONTENT_OPERATORS) + 1)
    if choice == len(CONTENT_OPERATORS):
        drawing = aligned_grid(3 + change.part % 4, pick((3, 5, 40), change.part // 4), font=font)
    else:
        drawing = CONTENT_OPERATORS[choice].replace(b"%s", font)
    chain = pick(((), *CHAINS), change.part // 16)
    stream = encoded_stream(b"", drawing, chain) if chain else stream_body(b"<< >>", drawing)
    found = re.search(rb"/Contents\s*(\d+\s+\d+\s+R|\[[^\]]*\])", pdf.objects[page])
    current = found[1].strip(b"[]") if found else b""
    _set_entry(pdf, page, b"Contents", b"[" + current + b" %d 0 R]" % pdf.new(stream))


_PDF_EDITS: dict[str, Callable[[_Pdf, Edit], None]] = {
    "duplicate_object": _duplicate_object,
    "truncate_object": _truncate_object,
    "delete_object": _delete_object,
    "reencode_stream": _reencode_stream,
    "damage_stream": _damage_stream,
    "stream_length": _stream_length,
    "kids": _kids,
    "page_types": _page_types,
    "count": _count,
    "tounicode": _tounicode,
    "acroform": _acroform,
    "number": _number,
    "reference": _reference,
    "name": _name,
    "mediabox": _mediabox,
    "contents": _contents,
    "form_loop": _form_loop,
    "pack": _pack,
    "xref_shift": _xref_shift,
    "xref_none": _xref_none,
    "xref_stream": _xref_stream,
    "incremental": _incremental,
    "content_operators": _content_operators,
}
assert set(_PDF_EDITS) == PDF_OPERATIONS


def written(objects: dict[int, bytes], root: int, layout: PdfLayout | None = None) -> bytes:
    """The objects as a PDF file laid out as `layout` says."""
    layout = layout or PdfLayout()
    # An object packed by one edit may be deleted by a later one.
    layout.packed = [[number for number in group if number in objects] for group in layout.packed]
    layout.packed = [group for group in layout.packed if group]
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    packed = {number for group in layout.packed for number in group}
    for number, body in sorted(objects.items()):
        if number not in packed:
            offsets[number] = len(out)
            out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    if not layout.incremental:
        for number, body in layout.duplicates:
            at = len(out)
            out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
            if layout.prefer_duplicates or number not in offsets:
                offsets[number] = at
    locations: dict[int, tuple[int, int]] = {}  # packed object -> (its object stream, index in it)
    next_number = max([*objects, *(number for number, _ in layout.duplicates), 0]) + 1
    if layout.packed:
        next_number = _write_object_streams(
            out, objects, layout, offsets=offsets, locations=locations, next_number=next_number
        )
    size = max([*offsets, *locations, 0]) + 1
    shifted = {number: offset + layout.shifted.get(number, 0) for number, offset in offsets.items()}
    table_at = len(out)
    if layout.xref == "none":
        out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, root, len(out) * 7)
    elif layout.xref == "stream":
        _write_xref_stream(out, shifted, locations, root, next_number)
    else:
        out += b"xref\n0 %d\n0000000000 65535 f \n" % size
        out += b"".join(
            b"%010d 00000 n \n" % max(0, shifted[number]) if number in shifted else b"0000000000 65535 f \n"
            for number in range(1, size)
        )
        out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, root, table_at)
    if layout.incremental and layout.duplicates:
        _write_update(out, layout, root, size, table_at)
    return bytes(out)


def _write_object_streams(
    out: bytearray,
    objects: dict[int, bytes],
    layout: PdfLayout,
    *,
    offsets: dict[int, int],
    locations: dict[int, tuple[int, int]],
    next_number: int,
) -> int:
    """Each group of objects as an object stream (each /Extends the one before); nested: the /Length of
    each is an integer object packed in the one before it, so reading one needs the other."""
    streams = list(range(next_number, next_number + len(layout.packed)))
    lengths = list(range(next_number + len(streams), next_number + 2 * len(streams)))
    data: dict[int, bytes] = {}
    headers: dict[int, tuple[int, int]] = {}  # index -> (objects in it, where the first one starts)
    for index in reversed(range(len(streams))):
        members = [(number, objects[number]) for number in layout.packed[index]]
        if layout.nested_lengths and index + 1 < len(streams):
            members.append((lengths[index + 1], b"%d" % len(data[index + 1])))
        pairs, bodies = [], b""
        for position, (number, body) in enumerate(members):
            pairs.append(b"%d %d" % (number, len(bodies)))
            bodies += body.strip() + b"\n"
            locations[number] = (streams[index], position)
        head = b" ".join(pairs) + b"\n"
        headers[index] = (len(members), len(head))
        data[index] = encoded(head + bodies, layout.packing_chain)
    for index, number in enumerate(streams):
        filters = b" ".join(b"/" + name.encode() for name in layout.packing_chain)
        entries = b"/Type /ObjStm /N %d /First %d" % headers[index]
        entries += b" /Filter [%s]" % filters if filters else b""
        entries += b" /Extends %d 0 R" % streams[index - 1] if index else b""
        length = b"%d 0 R" % lengths[index] if layout.nested_lengths and index else b"%d" % len(data[index])
        offsets[number] = len(out)
        out += b"%d 0 obj\n<< %s /Length %s >>\nstream\n" % (number, entries, length) + data[index]
        out += b"\nendstream\nendobj\n"
    return next_number + 2 * len(streams)


def _write_xref_stream(
    out: bytearray, offsets: dict[int, int], locations: dict[int, tuple[int, int]], root: int, number: int
) -> None:
    at = len(out)
    size = number + 1
    rows = []
    for entry in range(size):
        if entry == number:
            rows.append(struct.pack(">BIH", 1, at, 0))
        elif entry in offsets:
            rows.append(struct.pack(">BIH", 1, max(0, offsets[entry]) & 0xFFFFFFFF, 0))
        elif entry in locations:
            rows.append(struct.pack(">BIH", 2, *locations[entry]))
        else:
            rows.append(struct.pack(">BIH", 0, 0, 65535 if entry == 0 else 0))
    table = zlib.compress(b"".join(rows))
    out += b"%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root %d 0 R /Filter /FlateDecode /Length %d >>\n" % (
        number,
        size,
        root,
        len(table),
    )
    out += b"stream\n" + table + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % at


def _write_update(out: bytearray, layout: PdfLayout, root: int, size: int, previous_table: int) -> None:
    """An incremental update: the duplicated objects again, and a table of only them, with /Prev."""
    offsets: dict[int, int] = {}
    for number, body in layout.duplicates:
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    table_at = len(out)
    previous = {"right": previous_table, "itself": table_at, "nowhere": table_at * 3 + 17}[layout.previous]
    out += b"xref\n"
    for number, offset in sorted(offsets.items()):
        out += b"%d 1\n%010d 00000 n \n" % (number, offset)
    out += b"trailer\n<< /Size %d /Root %d 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n" % (
        max(size, *offsets) + 1,
        root,
        previous,
        table_at,
    )
