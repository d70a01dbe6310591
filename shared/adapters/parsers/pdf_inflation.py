"""How many bytes a PDF's compressed streams inflate to, counted before PDFium inflates them.

A small file can inflate to gigabytes. PDFium decompresses inside native code where no ceiling
applies, so the Flate streams it will need for text (content streams, fonts, object streams; images
are not decoded to read text) are inflated here first, incrementally, and the count stops at the
ceiling. The scan is lexical (each `stream` … `endstream` with its dictionary): a stream it cannot
delimit or decode is left to PDFium, whose memory is still bounded by the child's address-space limit.
"""

import re
import zlib

_STREAM = re.compile(rb"stream\r?\n")
_END = b"endstream"
_DICTIONARY_WINDOW = 4096
_CHUNK = 1024 * 1024


def inflated_size_exceeds(content: bytes, ceiling: int) -> bool:
    """True as soon as the text-relevant Flate streams inflate past `ceiling` bytes in total."""
    total = 0
    position = 0
    while (match := _STREAM.search(content, position)) is not None:
        start = match.end()
        end = content.find(_END, start)
        if end < 0:
            break
        position = end + len(_END)
        dictionary = content[max(0, match.start() - _DICTIONARY_WINDOW) : match.start()]
        dictionary = dictionary[dictionary.rfind(b"obj") + 3 :] if b"obj" in dictionary else dictionary
        if b"/Image" in dictionary or not (
            b"/FlateDecode" in dictionary or b"/Fl " in dictionary or b"/Fl]" in dictionary
        ):
            continue
        total += _inflated(content[start:end], ceiling - total + 1)
        if total > ceiling:
            return True
    return False


def _inflated(data: bytes, budget: int) -> int:
    """Bytes `data` inflates to, counting no further than `budget` (never holding more than a chunk)."""
    inflater = zlib.decompressobj()
    produced = 0
    pending = data
    try:
        while pending and produced <= budget:
            produced += len(inflater.decompress(pending, _CHUNK))
            pending = inflater.unconsumed_tail
    except zlib.error:
        pass  # damaged or not really Flate: PDFium decides what it is
    return produced
