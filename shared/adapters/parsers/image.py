"""PNG, JPEG and TIFF → an empty document that lists its pages (frames) for OCR and vision.

An image has no text layer: the parser's job is to check it is what it claims, and bounded, before any
engine decodes it — pixels (a 100-byte PNG can declare a gigapixel canvas) and frames (a TIFF can hold
thousands). Only the header is read here; the pixels are decoded by OCR, inside its own sandbox.
"""

import io
import logging
from typing import Any

from shared.domain.document import ExtractedDocument, ExtractionFailure, ExtractionLimits, ExtractionOutcome
from shared.domain.files import FailureReason
from shared.domain.recognition import MAX_OCR_PAGES
from shared.ports import DocumentParser

_log = logging.getLogger(__name__)

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/tiff"})
# What Pillow calls the formats it opens: a phone's JPEG with an embedded preview is "MPO", one picture.
_MEDIA_TYPE_OF = {"PNG": "image/png", "JPEG": "image/jpeg", "MPO": "image/jpeg", "TIFF": "image/tiff"}
# The decoders allowed to open it (Pillow's JPEG decoder is the one that opens an MPO).
_DECODERS = ("JPEG", "PNG", "TIFF")
# More than a 600-dpi A4 scan (35 megapixels) or any screenshot, far less than a decompression bomb declares.
MAX_IMAGE_PIXELS = 60_000_000


class ImageParser(DocumentParser):
    media_types = IMAGE_TYPES

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        from PIL import Image

        try:
            # Only the decoder of a format Quire accepts may open it: a file that sniffed as PNG is not
            # handed to whichever of Pillow's many decoders recognises it.
            with Image.open(io.BytesIO(content), formats=_DECODERS) as image:
                return _inspected(image, limits)
        except Image.DecompressionBombError:
            return _too_many_pixels()
        except MemoryError:
            raise
        except Exception as error:
            # A damaged header surfaces from Pillow's readers as almost any exception (OSError, but also
            # TypeError, KeyError, struct.error): each one means the same thing here.
            _log.warning("an image could not be read: %s: %s", type(error).__name__, error)
            return ExtractionFailure(
                reason=FailureReason.MALFORMED,
                detail="the image could not be read: it is damaged or not the format its name says",
            )


def _inspected(image: Any, limits: ExtractionLimits) -> ExtractionOutcome:
    """Its pages listed for OCR, or why it cannot be read, from the frames' headers alone."""
    media_type = _MEDIA_TYPE_OF[image.format]
    # An MPO's further frames are previews and depth maps of the one picture, not pages.
    frames = 1 if image.format == "MPO" else int(getattr(image, "n_frames", 1))
    # An image's pages cannot be cut without re-encoding it: an engine reads all of them, so the OCR
    # page limit bounds the frames too (Textract bills every page of a multi-page TIFF it reads).
    most = min(limits.max_pages, MAX_OCR_PAGES)
    if frames > most:
        return ExtractionFailure(
            reason=FailureReason.TOO_MANY_PAGES, detail=f"the image has {frames} pages; the limit is {most}"
        )
    # Every frame's own header: a small first page says nothing about the second.
    for frame in range(frames):
        image.seek(frame)
        width, height = image.size
        if width < 1 or height < 1:
            return ExtractionFailure(reason=FailureReason.MALFORMED, detail=f"page {frame + 1} has no pixels")
        if width * height > MAX_IMAGE_PIXELS:
            return _too_many_pixels(f"{width}x{height}")
    return ExtractedDocument(
        media_type=media_type, blocks=(), page_count=frames, pages_without_text=tuple(range(1, frames + 1))
    )


def _too_many_pixels(declared: str = "more") -> ExtractionFailure:
    return ExtractionFailure(
        reason=FailureReason.TOO_LARGE,
        detail=f"the image declares {declared} pixels; the limit is {MAX_IMAGE_PIXELS:,} pixels",
    )
