"""Page images: one page of a stored PDF or image drawn as a PNG, for a viewer that shows a citation's box on the
page it cites. Pure rules, no I/O: which types have pages, how large a page is drawn, where a drawing is kept,
and what a stored drawing says about itself.

A citation's box is normalised to the page as it is displayed (a PDF's /Rotate applied, an image's EXIF
orientation applied), so a drawing is of the page as displayed too, at any size: the viewer scales the box.
"""

import math
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath

from shared.domain.uploads import StorageKeyParts, derived_prefix, parse_storage_key

PDF_TYPE = "application/pdf"
# The image types Quire accepts (shared/domain/uploads.py ACCEPTED_TYPES); a TIFF's frames are its pages.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/tiff"})
PAGE_IMAGE_TYPE = "image/png"

# The longest side of a drawing, in pixels: a page fills a wide screen, and a citation's box is legible on it.
MAX_PAGE_SIDE = 1600
# And its area: with MAX_PAGE_SIDE it never binds (1600 x 1600 is 2.56 megapixels), but it stays the bound if the
# side is ever raised.
MAX_PAGE_PIXELS = 4_000_000
# A small PDF page (a receipt, a business card) is drawn larger, but never past twice its size at 72 dpi.
MAX_PDF_UPSCALE = 2.0
# An image is never drawn larger than it is: enlarging adds no detail, and the viewer scales it anyway.
MAX_IMAGE_UPSCALE = 1.0
# The largest page number asked for: far past any document Quire extracts (shared/domain/document.py limits).
MAX_PAGE_NUMBER = 100_000
# The keyword of the PNG text chunk that records how many pages the document has (read back from a cached drawing).
PAGE_COUNT_KEYWORD = "Quire page count"
# Enough of a drawing's first bytes to hold its signature, its IHDR chunk and the page-count chunk that follows it.
PNG_HEADER_BYTES = 256

NO_PAGES = (
    "{media_type} has no pages to draw: page images exist for PDFs and images (PNG, JPEG, TIFF); the cited blocks"
    " of this file are in GET /v1/files/{file_id}/document"
)


@dataclass(frozen=True)
class PageFit:
    """How one page is drawn: `scale` pixels per page unit (a PDF point, or an image's pixel), giving a drawing
    of at most `width` x `height` pixels."""

    scale: float
    width: int
    height: int


def fit_page(
    width: float,
    height: float,
    *,
    max_upscale: float,
    max_side: int = MAX_PAGE_SIDE,
    max_pixels: int = MAX_PAGE_PIXELS,
) -> PageFit:
    """The size a page of `width` x `height` units is drawn at: its longest side at most `max_side` pixels, its
    area at most `max_pixels`, never enlarged past `max_upscale`, its aspect ratio kept (each side at least one
    pixel, so a sliver of a page is still a drawing). A page whose size is not a positive, finite number (a
    MediaBox of zeros, of infinities) raises ValueError."""
    if not (math.isfinite(width) and math.isfinite(height)) or width <= 0 or height <= 0:
        raise ValueError(f"the page has no drawable size ({width:g} x {height:g})")
    factor = min(max_upscale, max_side / max(width, height), math.sqrt(max_pixels / (width * height)))
    # Floors (with a hair for the float arithmetic of an exact fit), so that neither bound is passed by rounding.
    target_width = min(max_side, max(1, math.floor(width * factor + 1e-6)))
    target_height = min(max_side, max(1, math.floor(height * factor + 1e-6)))
    # PDFium rounds each side up: a scale a hair below the fit keeps the drawing within the targets.
    scale = min(target_width / width, target_height / height) * (1 - 1e-9)
    return PageFit(scale=scale, width=target_width, height=target_height)


# Part of a drawing's key: raised when the drawing of the same page would change (a fix in how pages are drawn),
# so a kept drawing is never served in place of what the page now draws as. Older revisions are still drawings
# of the page (reconciliation accounts for them; the deletion sweep removes them).
DRAWING_REVISION = 1


def page_images_prefix(original_key: str) -> str:
    """Where the drawings of one original's pages are kept: derived from it, so its deletion sweeps them."""
    return f"{derived_prefix(original_key)}pages/"


def page_image_key(original_key: str, page: int, max_side: int = MAX_PAGE_SIDE) -> str:
    """The drawing of page `page` of the original at `original_key`, at most `max_side` pixels on its longest side."""
    return f"{page_images_prefix(original_key)}page-{page}-{max_side}-r{DRAWING_REVISION}.png"


_PAGE_IMAGE_NAME = re.compile(r"page-[1-9][0-9]{0,5}-[1-9][0-9]{0,4}(?:-r(?P<revision>[1-9][0-9]{0,3}))?\.png")


def parse_page_image_key(key: str) -> StorageKeyParts | None:
    """The original a drawing's key claims it was made from, or None for a key that is not a drawing's."""
    original, separator, name = key.rpartition("/pages/")
    if not separator or not original.startswith("derived/") or _PAGE_IMAGE_NAME.fullmatch(name) is None:
        return None
    return parse_storage_key(original.removeprefix("derived/"))


def is_superseded_drawing(key: str) -> bool:
    """A drawing of an earlier revision (or of none): never served again, so reconciliation removes it."""
    if parse_page_image_key(key) is None:
        return False
    named = _PAGE_IMAGE_NAME.fullmatch(key.rpartition("/pages/")[2])
    return named is not None and named.group("revision") != str(DRAWING_REVISION)


def page_image_filename(filename: str, page: int) -> str:
    """The name a drawing downloads as: the original's, with the page."""
    stem = PurePosixPath(filename).stem or "page"
    return f"{stem} page {page}.png"


@dataclass(frozen=True)
class PngHeader:
    width: int
    height: int
    page_count: int | None


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHUNK = struct.Struct(">I4s")


def read_png_header(prefix: bytes) -> PngHeader | None:
    """The size of the PNG whose first bytes are `prefix`, and the page count its text chunk records (None where
    it records none before its pixels, or where that chunk is not within `prefix`); None for bytes that do not
    begin a PNG. Every chunk read is checked against its CRC."""
    if not prefix.startswith(_PNG_SIGNATURE):
        return None
    at, size, page_count = len(_PNG_SIGNATURE), None, None
    while at + _CHUNK.size <= len(prefix):
        length, kind = _CHUNK.unpack_from(prefix, at)
        end = at + _CHUNK.size + length + 4
        if end > len(prefix):
            break
        data = prefix[at + _CHUNK.size : end - 4]
        if zlib.crc32(kind + data) != struct.unpack_from(">I", prefix, end - 4)[0]:
            return None
        if size is None:
            if kind != b"IHDR" or length != 13:
                return None
            size = struct.unpack_from(">II", data)
        elif kind == b"tEXt":
            keyword, _, text = data.partition(b"\x00")
            if keyword == PAGE_COUNT_KEYWORD.encode("latin-1") and text.isdigit() and len(text) <= 6:
                page_count = int(text)
        elif kind in (b"IDAT", b"IEND"):
            break
        at = end
    if size is None or not all(1 <= side <= 1 << 24 for side in size):
        return None
    return PngHeader(width=size[0], height=size[1], page_count=page_count)


@dataclass(frozen=True)
class DrawnPage:
    """One page drawn: the PNG, its size, and how many pages the document has (recorded in the PNG too)."""

    png: bytes
    page: int
    page_count: int
    width: int
    height: int


@dataclass(frozen=True)
class PageOutOfRange:
    page: int
    page_count: int

    @property
    def sentence(self) -> str:
        numbered = "it has only page 1" if self.page_count == 1 else f"its pages are numbered 1 to {self.page_count}"
        return f"page {self.page} of a {self.page_count}-page document: {numbered}"


@dataclass(frozen=True)
class PageUnreadable:
    """The page cannot be drawn (a damaged or protected file, a decompression bomb): `sentence` says why."""

    sentence: str


PageOutcome = DrawnPage | PageOutOfRange | PageUnreadable
