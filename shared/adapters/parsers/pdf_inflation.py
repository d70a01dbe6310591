"""How many bytes a PDF's streams decode to, counted before PDFium decodes them.

A small file can decode to gigabytes. PDFium decodes inside native code where no ceiling applies, so
every stream it will decode to read text is decoded here first, incrementally, through its whole filter
chain (Flate, LZW, run-length, ASCII85, ASCIIHex; every stage's output counts, since PDFium holds each),
and the count stops at the ceiling. A page's content counts once per page that loads it. Images are left
out (PDFium does not decode them to read text) unless something uses them as text: a page's /Contents,
a font's file. Inline images in content are decoded as PDFium decodes them to find where they end.

The scan is lexical and fails safe. Every `stream` keyword starts a stream; its dictionary is read from
the object header before it by a bounded tokenizer (names with #xx escapes, strings, comments, nesting),
and a reference in it is resolved from the file or from its object streams. A stream whose dictionary
cannot be read, or whose filters cannot be resolved, is decoded as its bytes look. A stream it cannot
delimit or decode at all is left to PDFium, whose memory is still bounded by the child's address-space
limit (shared/sandbox/); so is what a lexical scan cannot see: encrypted streams, and content drawn
many times over from one page (a form painted by another form), which the wall clock bounds too.

The scan's own work is linear in the file: every search is done once for the file (or once per piece of
decoded data), each object is read once, and what an attacker can still multiply has a budget (bytes
tokenized, input to the decoders that run in Python) past which the file is damaged.
"""

import binascii
import bisect
import re
import struct
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from shared.domain.document import ExtractionFailure
from shared.domain.files import FailureReason

# Most bytes a decoder hands on at once, and most bytes of the file fed to a chain at once.
_CHUNK = 64 * 1024
# Most bytes one object (a stream dictionary, or an object a reference names) may span.
_MAX_OBJECT_BYTES = 1024 * 1024
_MAX_NESTING = 32
# No producer writes a longer chain; PDFium would run it whole.
_MAX_FILTERS = 16
# Streams in one file: no producer writes this many (2,000 pages of 50 streams each are 100,000), and the
# scan spends some 20-50 microseconds on each, however small.
_MAX_STREAMS = 500_000
# Bytes of the file fed to decoders in all, as a multiple of its size: each byte is read once in an
# honest file, more only where streams overlap one another.
_MAX_READS_PER_BYTE = 3
# Decoded object streams kept to resolve references into them.
_MAX_KEPT_OBJECT_STREAM_BYTES = 64 * 1024 * 1024
# Bytes the tokenizer may read again (bytes of the file it went through before, and objects of decoded
# object streams): an honest file's objects are each read once and do not overlap, but headers nested in
# one another's strings or comments are read again and again (the tokenizer reads about a megabyte a
# second). Bytes read the first time are not limited: there are as many as the file has.
_MAX_REREAD_BYTES = 2 * 1024 * 1024
# Input to the decoders that run in Python (LZW, run-length; some 3 MB/s), as a multiple of the file's size
# and beyond it: an honest file feeds them its own bytes, about once.
_MAX_SLOW_DECODING_PER_BYTE = 4
_SLOW_DECODING_ALLOWANCE = 8 * 1024 * 1024
# Significant digits of a number the scan reads (CPython refuses to convert more than 4,300; leading
# zeros, which PDFium reads past, do not count): a longer number is unknown.
_MAX_DIGITS = 20
# Definitions of one object number compared to resolve a reference to it: an incremental save adds one,
# and no document is saved this many times over one object.
_MAX_DEFINITIONS = 64
# How far back in decoded content a match may start (an array of content references, an inline image).
_WATCH_OVERLAP = 64 * 1024

_WHITESPACE = b"\x00\t\n\x0c\r "
_REGULAR = rb"[^\x00\t\n\x0c\r ()<>\[\]{}/%]"
_END_OF_WORD = rb"(?!" + _REGULAR + rb")"
_SPACE = rb"[\x00\t\n\x0c\r ]*+"
_SPACE1 = rb"[\x00\t\n\x0c\r ]++"
_SKIPPED = rb"(?:[\x00\t\n\x0c\r ]++|%[^\r\n]*+)*+"
_SKIP = re.compile(_SKIPPED)
# The next token: None at the end, or at a delimiter that starts none.
_TOKEN = re.compile(_SKIPPED + rb"(<<|>>|\[|\]|\(|<|/" + _REGULAR + rb"*+|" + _REGULAR + rb"++)?")
_REFERENCE_REST = re.compile(_SKIPPED + rb"[0-9]+" + _SKIPPED + rb"R(?!" + _REGULAR + rb")")
_STRING_SPECIAL = re.compile(rb"[()\\]")
_NAME_ESCAPE = re.compile(rb"#([0-9A-Fa-f]{2})")
_INTEGER = re.compile(rb"[+-]?[0-9]+")
_LINE_END = re.compile(rb"[\r\n]")
# Patterns start with a literal or a class, never a lookbehind, so that the engine can skip ahead to them
# (a keyword's start is checked apart: see _starts_word).
_STREAM_KEYWORD = re.compile(rb"stream" + _END_OF_WORD)
_HEADER = re.compile(rb"([0-9]{1,10})" + _SPACE1 + rb"[0-9]{1,5}" + _SPACE1 + rb"obj" + _END_OF_WORD)
_IS_REGULAR = re.compile(_REGULAR)
_END_STREAM = re.compile(_SPACE + rb"endstream")
_HEX_DIGITS = b"0123456789abcdefABCDEF"
_NOT_HEX = bytes(c for c in range(256) if c not in _HEX_DIGITS)
_NOT_ASCII85 = re.compile(rb"[^!-uz]")
_ASCII85_DIGITS = bytes((c - 33) % 256 for c in range(256))

_FULL_NAMES = {"Fl": "FlateDecode", "LZW": "LZWDecode", "RL": "RunLengthDecode", "A85": "ASCII85Decode"}
_FULL_NAMES |= {"AHx": "ASCIIHexDecode"}
# The decoders PDFium lets stand before another in a chain (any other chain it does not decode).
_CHAINABLE = frozenset(_FULL_NAMES) | frozenset(_FULL_NAMES.values())


class _CeilingReached(Exception):
    pass


class _Damaged(Exception):
    """Streams laid out as no producer writes them, so that counting them would cost without bound."""


class _Unreadable(Exception):
    """An object the tokenizer cannot read with confidence: what it describes is guessed, not trusted."""


def inflation_failure(content: bytes, ceiling: int) -> ExtractionFailure | None:
    """Why PDFium must not open `content` (its streams decode past `ceiling` bytes), or None."""
    try:
        _Scan(content, ceiling).run()
    except _CeilingReached:
        return ExtractionFailure(
            reason=FailureReason.TOO_LARGE, detail=f"its compressed streams inflate past {ceiling} bytes"
        )
    except _Damaged as damage:
        return ExtractionFailure(reason=FailureReason.MALFORMED, detail=str(damage))
    return None


# ---------------------------------------------------------------------------------------------------
# Objects, read lexically


@dataclass(frozen=True)
class Name:
    value: str


@dataclass(frozen=True)
class Ref:
    number: int


class _Other:
    """Strings, reals, booleans, null, operators: nothing the count needs to tell apart."""


OTHER = _Other()
UNKNOWN = _Other()  # a reference the scan cannot resolve for certain
PdfObject = int | Name | Ref | _Other | list["PdfObject"] | dict[str, "PdfObject"]


class _Reader:
    """PDF objects from `data`, one at a time, bounded in bytes and nesting."""

    def __init__(self, data: bytes, position: int) -> None:
        self.data = data
        self.position = position
        self.end = min(len(data), position + _MAX_OBJECT_BYTES)

    def _token(self) -> bytes | None:
        match = _TOKEN.match(self.data, self.position, self.end)
        self.position = match.end()  # type: ignore[union-attr]
        return match.group(1)  # type: ignore[union-attr]

    def next_object(self, depth: int = 0) -> PdfObject:
        token = self._token()
        if token is None or depth > _MAX_NESTING:
            raise _Unreadable  # the end, or a stray delimiter: PDFium reads on past it, nothing here is trusted
        if token[0] == ord("/"):
            return _name(token)
        if token == b"<<":
            return self._dictionary(depth)
        if token == b"[":
            return self._array(depth)
        if token == b"(":
            return self._string()
        if token == b"<":
            return self._hex_string()
        if token in {b">>", b"]"}:
            raise _Unreadable
        return self._number_or_reference(token) if _INTEGER.fullmatch(token) else OTHER

    def _number_or_reference(self, token: bytes) -> PdfObject:
        number = _number(token)
        return UNKNOWN if number is None else self._reference_or(number)

    def _reference_or(self, number: int) -> PdfObject:
        rest = _REFERENCE_REST.match(self.data, self.position, self.end)
        if rest is None or number < 0:
            return number
        self.position = rest.end()
        return Ref(number)

    def _dictionary(self, depth: int) -> dict[str, PdfObject]:
        entries: dict[str, PdfObject] = {}
        while (key := self._token()) != b">>":
            if key is None or key[0] != ord("/"):
                raise _Unreadable
            entries[_name(key).value] = self.next_object(depth + 1)  # a repeated key: the last wins, as in PDFium
        return entries

    def _array(self, depth: int) -> list[PdfObject]:
        items: list[PdfObject] = []
        while True:
            mark = self.position
            if self._token() == b"]":
                return items
            self.position = mark
            items.append(self.next_object(depth + 1))

    def _hex_string(self) -> _Other:
        close = self.data.find(b">", self.position, self.end)
        if close < 0:
            self.position = self.end  # it was searched this far
            raise _Unreadable
        self.position = close + 1
        return OTHER

    def _string(self) -> _Other:
        depth = 1
        position = self.position
        while (special := _STRING_SPECIAL.search(self.data, position, self.end)) is not None:
            position = special.end()
            if special.group() == b"\\":
                position += 1
            elif special.group() == b"(":
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    self.position = position
                    return OTHER
        self.position = self.end  # it was searched this far
        raise _Unreadable


def _number(digits: bytes) -> int | None:
    """An integer token's value, or None when it has more significant digits than the scan reads."""
    sign = b"-" if digits.startswith(b"-") else b""
    significant = digits.lstrip(b"+-").lstrip(b"0")
    return int(sign + (significant or b"0")) if len(significant) <= _MAX_DIGITS else None


def _name(token: bytes) -> Name:
    raw = token[1:]
    if b"#" in raw:
        raw = _NAME_ESCAPE.sub(lambda m: bytes([int(m[1], 16)]), raw)
    return Name(raw.decode("latin-1"))


def _read(data: bytes, position: int) -> tuple[PdfObject, int] | None:
    """The object at `position` and where it ends, or None when it cannot be read with confidence."""
    return _read_scanned(data, position)[0]


def _read_scanned(data: bytes, position: int) -> tuple[tuple[PdfObject, int] | None, int]:
    """What _read gives, and how many bytes the tokenizer went through to give it."""
    reader = _Reader(data, position)
    try:
        value = reader.next_object()
    except _Unreadable:
        return None, reader.position - position
    return (value, reader.position), reader.position - position


# ---------------------------------------------------------------------------------------------------
# Decoders: each takes its input in pieces and hands on its output in pieces of at most _CHUNK bytes.


class _Decoder(Protocol):
    finished: bool

    def feed(self, data: bytes) -> Iterator[bytes]: ...

    def close(self) -> Iterator[bytes]: ...


class _Flate:
    """zlib as PDFium runs it: a valid zlib header, then inflate to the end of the deflate data (neither
    the checksum nor what follows is read), keeping what inflated before an error."""

    def __init__(self) -> None:
        self.finished = False
        self._header = b""
        self._inflater: zlib._Decompress | None = None

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._inflater is None and not self.finished:
            missing = 2 - len(self._header)
            self._header, data = self._header + data[:missing], data[missing:]
            if len(self._header) < 2:
                return
            method, flags = self._header
            if method & 0x0F != 8 or method >> 4 > 7 or (method << 8 | flags) % 31 or flags & 0x20:
                self.finished = True  # zlib refuses the header, so PDFium inflates nothing
                return
            self._inflater = zlib.decompressobj(-15)
        yield from self._inflate(data)

    def close(self) -> Iterator[bytes]:
        yield from self._inflate(b"")  # what zlib still holds when the input ran out as the output filled
        self.finished = True

    def _inflate(self, pending: bytes) -> Iterator[bytes]:
        inflater = self._inflater
        while inflater is not None and not self.finished:
            saved = inflater.copy()
            try:
                out = inflater.decompress(pending, _CHUNK)
            except zlib.error:
                yield from _salvaged(saved, pending)
                self.finished = True
                return
            rest = inflater.unconsumed_tail
            # Past the end of the deflate data the rest is never input, however often it is offered (the
            # scan used to loop on it forever); and a call that neither reads nor writes would repeat.
            self.finished = inflater.eof or (not out and len(rest) == len(pending) > 0)
            if out:
                yield out
            elif not rest:
                return
            pending = rest


def _salvaged(inflater: "zlib._Decompress", data: bytes) -> Iterator[bytes]:
    """What `data` inflates to before its error: CPython's zlib drops the output of a call that fails,
    PDFium keeps it. Fed again in pieces; the piece that fails is cut to the longest prefix that inflates
    (a prefix of a failing input fails or not, a longer one always does: a binary search), losing at most
    one byte's worth."""
    step, position = 1024, 0
    while position < len(data) and not inflater.eof:
        piece = data[position : position + step]
        after = inflater.copy()
        outs = _inflated(after, piece)
        if outs is None:
            good, bad, kept = 0, len(piece), []  # prefix lengths: `good` inflates, `bad` fails
            while bad - good > 1:
                middle = (good + bad) // 2
                attempt = _inflated(inflater.copy(), piece[:middle])
                if attempt is None:
                    bad = middle
                else:
                    good, kept = middle, attempt
            yield from (out for out in kept if out)
            return
        yield from (out for out in outs if out)
        inflater = after
        position += step


def _inflated(inflater: "zlib._Decompress", piece: bytes) -> list[bytes] | None:
    """What `piece` inflates to through `inflater` (which it advances), or None when it fails."""
    outs: list[bytes] = []
    try:
        while piece and not inflater.eof:
            outs.append(inflater.decompress(piece, _CHUNK))
            piece = inflater.unconsumed_tail
    except zlib.error:
        return None
    return outs


class _Lzw:
    """PDF's LZW: codes of 9 to 12 bits, most significant bit first; 256 clears the table, 257 ends.
    (About 3 MB/s of input in CPython: the loop is kept to the fewest operations per code.)"""

    def __init__(self, early_change: int = 1) -> None:
        self.finished = False
        self._early = 0 if early_change == 0 else 1
        self._table = [bytes([i]) for i in range(256)] + [b"", b""]
        self._previous: bytes | None = None
        self._bits = self._count = 0
        self._width = 9

    def feed(self, data: bytes) -> Iterator[bytes]:
        table, previous = self._table, self._previous
        bits, count, width = self._bits, self._count, self._width
        size = len(table)
        widen_at = (1 << width) - self._early  # the table size at which codes grow a bit
        add = table.append
        out: list[bytes] = []
        emit = out.append
        produced = 0
        for byte in b"" if self.finished else data:
            bits = (bits << 8) | byte
            count += 8
            if count < width:
                continue
            count -= width
            code = bits >> count
            bits &= (1 << count) - 1
            if code < 256:
                entry = table[code]
            elif code == 256:
                del table[258:]
                size, width, widen_at, previous = 258, 9, 512 - self._early, None
                continue
            elif code < size and code != 257:
                entry = table[code]
            elif code == size and previous is not None:
                entry = previous + previous[:1]
            else:
                self.finished = True  # the end code, or a code not yet defined: PDFium stops there too
                break
            if previous is not None and size < 4096:
                add(previous + entry[:1])
                size += 1
                if size >= widen_at and width < 12:
                    width += 1
                    widen_at = (1 << width) - self._early
            previous = entry
            emit(entry)
            produced += len(entry)
            if produced >= _CHUNK:
                yield b"".join(out)
                out.clear()
                produced = 0
        self._previous, self._bits, self._count, self._width = previous, bits, count, width
        if out:
            yield b"".join(out)

    def close(self) -> Iterator[bytes]:
        self.finished = True
        return iter(())


class _RunLength:
    def __init__(self) -> None:
        self.finished = False
        self._pending = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        data = self._pending + data
        position = 0
        out: list[bytes] = []
        size = 0
        while position < len(data) and not self.finished:
            length = data[position]
            self.finished = length == 128
            needed = length + 2 if length < 128 else 2
            if self.finished or position + needed > len(data):
                break
            literal = length < 128
            run = (
                data[position + 1 : position + needed]
                if literal
                else data[position + 1 : position + 2] * (257 - length)
            )
            position += needed
            out.append(run)
            size += len(run)
            if size >= _CHUNK:
                yield b"".join(out)
                out, size = [], 0
        self._pending = data[position:]
        if out:
            yield b"".join(out)

    def close(self) -> Iterator[bytes]:
        self.finished = True
        return iter(())


class _AsciiHex:
    """Hex digits up to `>`; anything else is skipped, as PDFium does."""

    def __init__(self) -> None:
        self.finished = False
        self._odd = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.finished:
            return
        end = data.find(b">")
        if end >= 0:
            data, self.finished = data[:end], True
        digits = self._odd + data.translate(None, _NOT_HEX)
        whole = len(digits) - len(digits) % 2
        self._odd = digits[whole:]
        if whole:
            yield binascii.unhexlify(digits[:whole])
        if self.finished:
            yield from self.close()

    def close(self) -> Iterator[bytes]:
        self.finished = True
        if self._odd:
            yield binascii.unhexlify(self._odd + b"0")
            self._odd = b""


class _Ascii85:
    """Groups of five digits up to the first character that is none (`~` of `~>`); `z` is four zeros."""

    def __init__(self) -> None:
        self.finished = False
        self._carry = b""

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self.finished:
            return
        data = data.translate(None, _WHITESPACE)
        stop = _NOT_ASCII85.search(data)
        if stop is not None:
            data, self.finished = data[: stop.start()], True
        data = self._carry + data.replace(b"z", b"!!!!!")
        whole = len(data) - len(data) % 5
        self._carry = data[whole:]
        step = _CHUNK - _CHUNK % 5
        for start in range(0, whole, step):
            yield _ascii85_groups(data[start : min(whole, start + step)])
        if self.finished:
            yield from self.close()

    def close(self) -> Iterator[bytes]:
        self.finished = True
        if len(self._carry) > 1:
            # A last group of n digits stands for n - 1 bytes (padded with the highest digit, as PDFium does).
            yield _ascii85_groups(self._carry + b"u" * (5 - len(self._carry)))[: len(self._carry) - 1]
        self._carry = b""


def _ascii85_groups(text: bytes) -> bytes:
    """Whole groups of five (base64.a85decode loops over characters in Python, at 2.6 MB/s)."""
    digits = text.translate(_ASCII85_DIGITS)
    groups = zip(digits[0::5], digits[1::5], digits[2::5], digits[3::5], digits[4::5], strict=True)
    values = [(a * 52200625 + b * 614125 + c * 7225 + d * 85 + e) & 0xFFFFFFFF for a, b, c, d, e in groups]
    return struct.pack(f">{len(values)}I", *values)


def _decoder(name: str, parameters: PdfObject) -> _Decoder | None:
    name = _FULL_NAMES.get(name, name)
    if name == "FlateDecode":
        return _Flate()
    if name == "LZWDecode":
        early = parameters.get("EarlyChange", 1) if isinstance(parameters, dict) else 1
        return _Lzw(early if isinstance(early, int) else 1)
    if name == "RunLengthDecode":
        return _RunLength()
    if name == "ASCII85Decode":
        return _Ascii85()
    if name == "ASCIIHexDecode":
        return _AsciiHex()
    return None  # an image codec or an unknown name: PDFium decodes no further to read text


def _guessed_decoder(head: bytes) -> _Decoder | None:
    """The decoder the first bytes of a stream of unknown filters look made for."""
    if len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and not (head[0] << 8 | head[1]) % 31:
        return _Flate()
    if len(head) >= 2 and head[0] == 0x80 and not head[1] & 0x80:  # LZW's clear code, first
        return _Lzw()
    visible = head.translate(None, _WHITESPACE)[:16]
    if len(visible) >= 8 and not visible.translate(None, _HEX_DIGITS):
        return _AsciiHex()
    if len(visible) >= 8 and _NOT_ASCII85.search(visible.removeprefix(b"<~")) is None:
        return _Ascii85()
    return None


# ---------------------------------------------------------------------------------------------------
# Counting


@dataclass
class _Counter:
    ceiling: int
    slow_limit: int = 0  # input the Python decoders may take in all
    total: int = 0
    slow: int = 0

    def add(self, size: int) -> None:
        self.total += size
        if self.total > self.ceiling:
            raise _CeilingReached

    def add_slow(self, size: int) -> None:
        self.slow += size
        if self.slow > self.slow_limit:
            raise _Damaged(f"its LZW and run-length streams take more than {self.slow_limit} bytes to decode")


class _Chain:
    """A stream's decoders in order: each stage's output counts (times the number of times PDFium
    decodes the stream), and the last stage's goes to `sink`."""

    def __init__(self, decoders: list[_Decoder], counter: _Counter, sink: Callable[[bytes], None], times: int) -> None:
        self._decoders, self._counter, self._sink, self._times = decoders, counter, sink, times

    @property
    def finished(self) -> bool:
        return bool(self._decoders) and self._decoders[0].finished

    @property
    def decodes(self) -> bool:
        return bool(self._decoders)

    def push(self, data: bytes, stage: int = 0) -> None:
        if stage == len(self._decoders):
            self._sink(data)
            return
        if isinstance(self._decoders[stage], _Lzw | _RunLength):
            self._counter.add_slow(len(data))
        for out in self._decoders[stage].feed(data):
            self._counter.add(len(out) * self._times)
            self.push(out, stage + 1)

    def close(self, stage: int = 0) -> None:
        if stage < len(self._decoders):
            for out in self._decoders[stage].close():
                self._counter.add(len(out) * self._times)
                self.push(out, stage + 1)
            self.close(stage + 1)


class _Guessed:
    """A stage that becomes the decoder its first bytes look made for (see _guessed_decoder), whose
    output is guessed again, a few levels down: for a stream whose filters cannot be read."""

    finished = False

    def __init__(
        self,
        counter: _Counter,
        sink: Callable[[bytes], None],
        times: int,
        depth: int = 0,
        uses: "_TextUses | None" = None,
    ) -> None:
        self._counter, self._sink, self._times, self._depth = counter, sink, times, depth
        self._head = b""
        self._chain: _Chain | None = None
        # Uses are also read in what a guessed stage decodes before it is guessed again: any stage's
        # output may be the stream's real content (the last one, which the sink gets, may be a wrong guess).
        self._uses = uses
        self._reader = _UsesReader(uses) if uses is not None and depth else None

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._chain is None:
            self._head += data
            if len(self._head) < 64:
                return iter(())
            data, self._head = self._head, b""
            self._chain = self._chain_for(data)
        self._push(data)
        self.finished = self._chain.finished
        return iter(())

    def close(self) -> Iterator[bytes]:
        if self._chain is None:
            self._chain = self._chain_for(self._head)
            self._push(self._head)
        self._chain.close()
        self.finished = True
        return iter(())

    def _push(self, data: bytes) -> None:
        if self._reader is not None and self._chain is not None and self._chain.decodes:
            self._reader(data)
        self._chain.push(data)  # type: ignore[union-attr]

    def _chain_for(self, head: bytes) -> _Chain:
        decoder = _guessed_decoder(head) if self._depth < 4 else None
        if decoder is None:
            return _Chain([], self._counter, self._sink, self._times)
        deeper = _Guessed(self._counter, self._sink, self._times, self._depth + 1, self._uses)
        return _Chain([decoder, deeper], self._counter, self._sink, self._times)


def _name_pattern(name: str) -> bytes:
    """`/name` as a pattern that also matches it written with #xx escapes, as a dictionary key."""
    characters = (b"(?:%s|#%X[%x%X])" % (re.escape(c).encode(), ord(c) >> 4, ord(c) & 15, ord(c) & 15) for c in name)
    return b"/" + b"".join(characters) + _END_OF_WORD + _SPACE


_ONE_REF = rb"([0-9]{1,10})" + _SPACE1 + rb"[0-9]{1,5}" + _SPACE1 + rb"R" + _END_OF_WORD
_ANY_REF = rb"[0-9]{1,10}" + _SPACE1 + rb"[0-9]{1,5}" + _SPACE1 + rb"R" + _END_OF_WORD
_REFERENCE = re.compile(_ONE_REF)
# What PDFium decodes as text whatever the stream says it is: a page's content (each time the page is
# loaded), a font's file or character map, a Type 3 font's glyphs. Group 1 is one reference, group 2 a
# list of them.
_CONTENT_USE = re.compile(
    _name_pattern("Contents") + rb"(?:" + _ONE_REF + rb"|\[((?:" + _SPACE + _ANY_REF + rb")*+)" + _SPACE + rb"\])"
)
_FONT_KEYS = ("FontFile", "FontFile2", "FontFile3", "ToUnicode", "UseCMap", "Encoding")
_FONT_USE = re.compile(rb"(?:" + b"|".join(_name_pattern(key) for key in _FONT_KEYS) + rb")" + _ONE_REF)
_GLYPHS_USE = re.compile(_name_pattern("CharProcs") + rb"(?:" + _ONE_REF + rb"|<<([^<>]{0,1048576}+)>>)")


@dataclass
class _TextUses:
    """The objects used as text: how many times a page loads each as content, which fonts use; and the
    ones a /Contents or /CharProcs names indirectly (an array, a dictionary of the actual streams)."""

    content: Counter[int] = field(default_factory=Counter)
    fonts: set[int] = field(default_factory=set)
    indirect_content: Counter[int] = field(default_factory=Counter)
    indirect_glyphs: set[int] = field(default_factory=set)

    def scan(self, text: bytes, after: int = 0) -> None:
        """Uses in `text` that end past `after` (the ones before were seen with the previous piece)."""
        for match in _CONTENT_USE.finditer(text):
            if match.end() > after and match.group(1) is not None:
                self.content[int(match.group(1))] += 1
                self.indirect_content[int(match.group(1))] += 1
            elif match.end() > after:
                self.content.update(int(ref.group(1)) for ref in _REFERENCE.finditer(match.group(2)))
        self.fonts.update(int(match.group(1)) for match in _FONT_USE.finditer(text) if match.end() > after)
        for match in _GLYPHS_USE.finditer(text):
            if match.end() > after and match.group(1) is not None:
                self.indirect_glyphs.add(int(match.group(1)))
            elif match.end() > after:
                self.fonts.update(int(ref.group(1)) for ref in _REFERENCE.finditer(match.group(2)))

    def times_loaded(self, number: int) -> int:
        return max(1, self.content[number])

    def as_text(self, number: int) -> bool:
        return number in self.content or number in self.fonts


# An inline image: `BI`, its dictionary (at most _MAX_INLINE_DICTIONARY bytes), `ID` and a white-space.
_INLINE_BEGIN = re.compile(rb"BI" + _END_OF_WORD)
_INLINE_DATA = re.compile(rb"ID[\x00\t\n\x0c\r ]")
_MAX_INLINE_DICTIONARY = 4096


def _starts_word(data: bytes, position: int) -> bool:
    return position == 0 or _IS_REGULAR.match(data, position - 1) is None


class _UsesReader:
    """The text uses named in decoded bytes that come in pieces (a use may span two of them)."""

    def __init__(self, uses: _TextUses) -> None:
        self._uses = uses
        self._tail = b""

    def __call__(self, data: bytes) -> None:
        text = self._tail + data
        self._uses.scan(text, after=len(self._tail))
        self._tail = text[-_WATCH_OVERLAP:]


class _ContentWatcher:
    """Reads a stream's decoded bytes as content: an inline image (`BI … ID`) whose first filter expands
    is decoded as PDFium decodes it to find its end; and the text uses named in it (an object stream)."""

    def __init__(self, counter: _Counter, uses: _TextUses, times: int, *, scan_uses: bool) -> None:
        self._counter, self._times = counter, times
        self._uses = _UsesReader(uses) if scan_uses else None
        self._tail = b""
        self._images: list[_Chain] = []

    @property
    def reads_uses(self) -> bool:
        return self._uses is not None

    def __call__(self, data: bytes) -> None:
        for image in self._images:
            image.push(data)
        self._images = [image for image in self._images if not image.finished]
        text = self._tail + data
        for entries, end in _inline_images(text):
            if end > len(self._tail) and len(self._images) < 8:
                decoder = _inline_decoder(entries)
                if decoder is not None:
                    image = _Chain([decoder], self._counter, _ignored, self._times)
                    image.push(text[end:])
                    self._images.append(image)
        if self._uses is not None:
            self._uses(data)
        self._tail = text[-_WATCH_OVERLAP:]


def _inline_images(text: bytes) -> Iterator[tuple[bytes, int]]:
    """Each inline image's dictionary and where its data starts, as `BI(.{0,4096}?)ID` finds them, in
    linear time: each `BI` looks up the first `ID` after it instead of searching for it."""
    begins = [begin for begin in _INLINE_BEGIN.finditer(text) if _starts_word(text, begin.start())]
    if not begins:
        return
    marks = [mark.start() for mark in _INLINE_DATA.finditer(text) if _starts_word(text, mark.start())]
    resume = 0
    for begin in begins:
        if begin.start() < resume:
            continue  # inside the previous image's dictionary
        index = bisect.bisect_left(marks, begin.end() + 1)  # `ID` right after `BI` would be one word
        if index == len(marks) or marks[index] - begin.end() > _MAX_INLINE_DICTIONARY:
            continue
        resume = marks[index] + 3
        yield text[begin.end() : marks[index]], resume


def _ignored(_: bytes) -> None:
    pass


def _inline_decoder(entries: bytes) -> _Decoder | None:
    """The decoder PDFium runs over an inline image's data to find its end: its first filter's, where
    that one expands (an unreadable dictionary: Flate, the costliest it could be)."""
    read = _read(b"<<" + entries + b">>", 0)
    if read is None or not isinstance(read[0], dict):
        return _Flate()
    value = read[0].get("F", read[0].get("Filter"))
    first = value[0] if isinstance(value, list) and value else value
    name = _FULL_NAMES.get(first.value, first.value) if isinstance(first, Name) else ""
    return _decoder(name, OTHER) if name in {"FlateDecode", "LZWDecode", "RunLengthDecode"} else None


# ---------------------------------------------------------------------------------------------------
# The scan


@dataclass
class _Stream:
    keyword: int  # where its `stream` keyword is
    data_start: int
    numbers: tuple[int, ...]  # the object numbers its headers give it (none, when none could be read)
    dictionary: dict[str, PdfObject] | None  # None: unreadable, or read differently from two headers


class _Scan:
    def __init__(self, content: bytes, ceiling: int) -> None:
        self.content = content
        self.counter = _Counter(
            ceiling, slow_limit=_MAX_SLOW_DECODING_PER_BYTE * len(content) + _SLOW_DECODING_ALLOWANCE
        )
        self.uses = _TextUses()
        self.reads = 0
        self.max_reads = _MAX_READS_PER_BYTE * len(content) + _CHUNK
        # Object headers: where each `N G obj` ends, and by object number (generations are not told
        # apart: two definitions that disagree make a reference unknown, which is the safe side).
        self.header_ends: list[int] = []
        self.header_numbers: list[int] = []
        self.definitions: dict[int, list[int]] = {}
        # Objects inside decoded object streams: number -> (which kept stream, where in it).
        self.kept: list[bytes] = []
        self.kept_bytes = 0
        self.packed: dict[int, list[tuple[int, int]]] = {}
        self.stream_ends = [end.start() for end in re.finditer(b"endstream", content)]
        self._objects: dict[int, tuple[PdfObject, int] | None] = {}
        self._packed_objects: dict[tuple[int, int], tuple[PdfObject, int] | None] = {}
        self._references: dict[int, PdfObject] = {}
        self.reread = 0  # see _MAX_REREAD_BYTES
        self._tokenized_to = 0  # the furthest byte of the file the tokenizer went through
        self._line_end: tuple[int, re.Match[bytes] | None] = (-1, None)  # searched from, found
        self._applied_uses: Counter[int] = Counter()  # of each indirect /Contents, the uses added for it

    def run(self) -> None:
        for header in _HEADER.finditer(self.content):
            number = int(header.group(1))
            self.header_ends.append(header.end())
            self.header_numbers.append(number)
            self.definitions.setdefault(number, []).append(header.end())
        self.uses.scan(self.content)
        keywords = [
            match for match in _STREAM_KEYWORD.finditer(self.content) if _starts_word(self.content, match.start())
        ]
        if len(keywords) > _MAX_STREAMS:
            raise _Damaged(f"it has {len(keywords)} streams; no document needs more than {_MAX_STREAMS}")
        streams: list[_Stream] = []
        for keyword in keywords:
            streams.append(self._stream(keyword, streams[-1].data_start if streams else 0))
        # Object streams first: they hold what references in the other streams' dictionaries name.
        packing = [self._is_a(stream, "Type", "ObjStm") for stream in streams]
        for stream in (stream for stream, packs in zip(streams, packing, strict=True) if packs):
            self._count(stream, keep=True)
        # A stream whose dictionary or filters cannot be known may be an object stream too: its uses are
        # found before any stream is counted (it is counted with the others).
        unknown = [not packs and self._undecidable(stream) for stream, packs in zip(streams, packing, strict=True)]
        for stream in (stream for stream, undecidable in zip(streams, unknown, strict=True) if undecidable):
            self._count(stream, uses_only=True)
        self._resolve_indirect_uses()
        images: list[_Stream] = []
        for stream in (stream for stream, packs in zip(streams, packing, strict=True) if not packs):
            if self._is_a(stream, "Subtype", "Image"):
                images.append(stream)
            else:
                self._count(stream)
        self._resolve_indirect_uses()
        for stream in images:
            if any(self.uses.as_text(number) for number in stream.numbers):
                self._count(stream)

    def _stream(self, keyword: re.Match[bytes], since: int) -> _Stream:
        """The stream at a `stream` keyword, with the dictionary that ends just before it. Every object
        header after `since` (where the previous stream's data starts) is read, since one may hide inside
        another's string: a dictionary is trusted only when every header that ends here agrees on it."""
        line_end = self._next_line_end(keyword.end())
        if line_end is None:
            data_start = len(self.content)
        else:  # the data starts on the next line, as PDFium reads it (CR LF is one line end)
            data_start = line_end.end() + (self.content[line_end.start() : line_end.start() + 2] == b"\r\n")
        numbers: list[int] = []
        dictionaries: list[dict[str, PdfObject]] = []
        first = bisect.bisect_left(self.header_ends, since)
        for header in range(first, bisect.bisect_right(self.header_ends, keyword.start())):
            if not self._opens_dictionary(self.header_ends[header]):
                continue
            read = self._object(self.header_ends[header])
            if read is not None and isinstance(read[0], dict) and self._skipped(read[1]) == keyword.start():
                numbers.append(self.header_numbers[header])
                dictionaries.append(read[0])
        agreed = dictionaries[0] if dictionaries and all(d == dictionaries[0] for d in dictionaries) else None
        return _Stream(keyword.start(), data_start, tuple(numbers), agreed)

    def _skipped(self, position: int) -> int:
        return _SKIP.match(self.content, position).end()  # type: ignore[union-attr]

    def _next_line_end(self, position: int) -> re.Match[bytes] | None:
        """The first line end at or after `position` (keywords come in order: one search serves many)."""
        searched_from, found = self._line_end
        if searched_from < 0 or position < searched_from or (found is not None and found.start() < position):
            found = _LINE_END.search(self.content, position)
            self._line_end = (position, found)
        return found

    def _opens_dictionary(self, position: int) -> bool:
        """Whether the object at `position` starts as a dictionary (what a stream's must be); the
        whitespace and comments skipped count against the tokenizer's budget."""
        start = self._skipped(position)
        self._went_through(position, start)
        return self.content.startswith(b"<<", start)

    def _object(self, position: int) -> tuple[PdfObject, int] | None:
        if position not in self._objects:
            read, scanned = _read_scanned(self.content, position)
            self._went_through(position, position + scanned)
            self._objects[position] = read
        return self._objects[position]

    def _packed_object(self, index: int, position: int) -> tuple[PdfObject, int] | None:
        if (index, position) not in self._packed_objects:
            read, scanned = _read_scanned(self.kept[index], position)
            self._read_again(scanned)
            self._packed_objects[index, position] = read
        return self._packed_objects[index, position]

    def _went_through(self, start: int, end: int) -> None:
        """The tokenizer went through bytes start..end of the file: what it had been through before counts."""
        fresh = max(0, end - max(start, self._tokenized_to))
        self._tokenized_to = max(self._tokenized_to, end)
        self._read_again(end - start - fresh)

    def _read_again(self, size: int) -> None:
        self.reread += size
        if self.reread > _MAX_REREAD_BYTES:
            raise _Damaged(f"its objects are nested in one another: more than {_MAX_REREAD_BYTES} bytes read again")

    def _resolved(self, value: PdfObject) -> PdfObject:
        """`value`, or what a reference names when every definition of it agrees; else UNKNOWN."""
        if not isinstance(value, Ref):
            return value
        if value.number not in self._references:
            self._references[value.number] = self._definition(value.number)
        return self._references[value.number]

    def _definition(self, number: int) -> PdfObject:
        definitions = self.definitions.get(number, [])
        packed = self.packed.get(number, [])
        if len(definitions) + len(packed) > _MAX_DEFINITIONS:
            return UNKNOWN
        found: list[PdfObject] = []
        for position in definitions:
            read = self._object(position)
            found.append(UNKNOWN if read is None else read[0])
        for index, position in packed:
            read = self._packed_object(index, position)
            found.append(UNKNOWN if read is None else read[0])
        return found[0] if found and all(item == found[0] for item in found) else UNKNOWN

    def _is_a(self, stream: _Stream, key: str, name: str) -> bool:
        return stream.dictionary is not None and self._resolved(stream.dictionary.get(key, OTHER)) == Name(name)

    def _decoders(self, dictionary: dict[str, PdfObject]) -> list[_Decoder] | None:
        """The decoders PDFium runs on a stream, in order; None when its filters cannot be known."""
        if "Filter" not in dictionary:
            return []
        filters = self._resolved(dictionary["Filter"])
        parameters = self._resolved(dictionary.get("DecodeParms", OTHER))
        if isinstance(filters, list):
            stages = [self._resolved(item) for item in filters]
            each = [self._resolved(item) for item in parameters] if isinstance(parameters, list) else []
        else:
            stages, each = [filters], [parameters]
        if any(stage is UNKNOWN for stage in stages):
            return None
        names = [stage.value for stage in stages if isinstance(stage, Name)]
        if len(names) < len(stages) or any(name not in _CHAINABLE for name in names[:-1]):
            return []  # PDFium refuses such a chain and reads the data as it is
        if len(names) > _MAX_FILTERS:
            raise _Damaged(f"a stream has {len(names)} filters")
        decoders: list[_Decoder] = []
        for index, name in enumerate(names):
            if name == "Crypt":
                continue
            decoder = _decoder(name, each[index] if index < len(each) else OTHER)
            if decoder is None:
                break
            decoders.append(decoder)
        return decoders

    def _data_end(self, stream: _Stream, decoders: list[_Decoder] | None) -> int:
        """Where PDFium ends the stream's data: at /Length when `endstream` follows it there, else at the
        first `endstream`; past it, when the length is a reference the scan cannot resolve, so long as
        the decoders read on (each stops at its own end of data)."""
        following = bisect.bisect_left(self.stream_ends, stream.data_start)
        first_end = self.stream_ends[following] if following < len(self.stream_ends) else len(self.content)
        if stream.dictionary is None or "Length" not in stream.dictionary:
            return first_end
        length = self._resolved(stream.dictionary["Length"])
        end = stream.data_start + length if isinstance(length, int) and length >= 0 else len(self.content)
        if end < len(self.content) and _END_STREAM.match(self.content, end):
            return end
        return len(self.content) if length is UNKNOWN and decoders else first_end

    def _undecidable(self, stream: _Stream) -> bool:
        return stream.dictionary is None or self._decoders(stream.dictionary) is None

    def _count(self, stream: _Stream, *, keep: bool = False, uses_only: bool = False) -> None:
        """Decode the stream, counting what it decodes to times the pages that load it, and keep it when
        it is an object stream. `uses_only`: decode it only to find the uses named in it (its bytes stay
        counted against the ceiling while it decodes: counted again later, they would reach it too)."""
        times = 1 if uses_only else max((self.uses.times_loaded(number) for number in stream.numbers), default=1)
        counted_before = self.counter.total
        kept = bytearray()

        def sink(data: bytes) -> None:
            watcher(data)
            if keep and self.kept_bytes + len(kept) + len(data) <= _MAX_KEPT_OBJECT_STREAM_BYTES:
                kept.extend(data)

        decoders = self._decoders(stream.dictionary) if stream.dictionary is not None else None
        # Uses are named in objects: in the file's own bytes (scanned with it), in object streams, and in
        # what may be one (PDFium reads objects from no other stream).
        watcher = _ContentWatcher(self.counter, self.uses, times, scan_uses=(keep or uses_only) and decoders != [])
        chain = _Chain(
            [_Guessed(self.counter, sink, times, uses=self.uses if watcher.reads_uses else None)]
            if decoders is None
            else decoders,
            self.counter,
            sink,
            times,
        )
        end = self._data_end(stream, decoders)
        for start in range(stream.data_start, end, _CHUNK):
            piece = self.content[start : min(end, start + _CHUNK)]
            self.reads += len(piece)
            if self.reads > self.max_reads:
                raise _Damaged(f"its streams overlap one another: more than {_MAX_READS_PER_BYTE} reads of each byte")
            chain.push(piece)
            if chain.finished:
                break
        chain.close()
        if uses_only:
            self.counter.total = counted_before
        if keep and stream.dictionary is not None:
            self._index(stream.dictionary, bytes(kept))

    def _index(self, dictionary: dict[str, PdfObject], decoded: bytes) -> None:
        """Where each object of a decoded object stream is: its header is pairs of number and offset."""
        first = self._resolved(dictionary.get("First", OTHER))
        if not isinstance(first, int) or not 0 <= first <= len(decoded):
            return
        numbers = [_number(number) for number in _INTEGER.findall(decoded, 0, first)]
        index = len(self.kept)
        self.kept.append(decoded)
        self.kept_bytes += len(decoded)
        for number, offset in zip(numbers[0::2], numbers[1::2], strict=False):
            if number is None or offset is None:
                continue  # a reference to it stays unknown
            self.packed.setdefault(number, []).append((index, first + offset))
            self._references.pop(number, None)  # resolved before this definition was known

    def _resolve_indirect_uses(self) -> None:
        """A /Contents that names an array of streams, a /CharProcs that names a dictionary of them. Every
        definition of the array counts (PDFium reads the one its cross-reference names, which the scan
        does not know): each stream as many times as the definition that names it most often."""
        for number, times in list(self.uses.indirect_content.items()):
            added = times - self._applied_uses[number]
            if added <= 0:
                continue
            self._applied_uses[number] = times
            named: Counter[int] = Counter()
            for target in self._every_definition(number):
                if isinstance(target, list):
                    named |= Counter(item.number for item in target if isinstance(item, Ref))
            for stream, count in named.items():
                self.uses.content[stream] += count * added
        for number in list(self.uses.indirect_glyphs):
            for glyphs in self._every_definition(number):
                for glyph in glyphs.values() if isinstance(glyphs, dict) else ():
                    if isinstance(glyph, Ref):
                        self.uses.fonts.add(glyph.number)

    def _every_definition(self, number: int) -> list[PdfObject]:
        """What each readable definition of an object is, in the file and in its object streams."""
        found = [read[0] for read in map(self._object, self.definitions.get(number, ())) if read is not None]
        packed = (self._packed_object(index, position) for index, position in self.packed.get(number, ()))
        return found + [read[0] for read in packed if read is not None]
