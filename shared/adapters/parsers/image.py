"""PNG, JPEG and TIFF → an empty document that lists its pages (frames) for OCR and vision.

An image has no text layer: the parser's job is to check it is what it claims, and bounded, before any
engine decodes it — pixels (a 100-byte PNG can declare a gigapixel canvas) and frames (a TIFF can hold
thousands). Only the header is read here; the pixels are decoded by OCR, inside its own sandbox.
"""

import io

from shared.domain.document import ExtractedDocument, ExtractionFailure, ExtractionLimits, ExtractionOutcome
from shared.domain.files import FailureReason

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/tiff"})
_FORMATS = {"image/png": "PNG", "image/jpeg": "JPEG", "image/tiff": "TIFF"}
# More than a 600-dpi A4 scan (35 megapixels) or any screenshot, far less than a decompression bomb declares.
MAX_IMAGE_PIXELS = 60_000_000


class ImageParser:
    media_types = IMAGE_TYPES

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome:
        from PIL import Image, UnidentifiedImageError

        try:
            # Only the decoder of a format Quire accepts may open it: a file that sniffed as PNG is not
            # handed to whichever of Pillow's many decoders recognises it.
            image = Image.open(io.BytesIO(content), formats=sorted(set(_FORMATS.values())))
        except Image.DecompressionBombError:
            return ExtractionFailure(
                reason=FailureReason.TOO_LARGE,
                detail=f"the image declares more pixels than the limit of {MAX_IMAGE_PIXELS:,}",
            )
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as error:
            return ExtractionFailure(reason=FailureReason.MALFORMED, detail=f"the image could not be read: {error}")
        with image:
            media_type = next(kind for kind, name in _FORMATS.items() if name == image.format)
            width, height = image.size
            if width < 1 or height < 1:
                return ExtractionFailure(reason=FailureReason.MALFORMED, detail="the image has no pixels")
            if width * height > MAX_IMAGE_PIXELS:
                return ExtractionFailure(
                    reason=FailureReason.TOO_LARGE,
                    detail=f"the image is {width}x{height} pixels; the limit is {MAX_IMAGE_PIXELS:,} pixels",
                )
            frames = int(getattr(image, "n_frames", 1))
            if frames > limits.max_pages:
                return ExtractionFailure(
                    reason=FailureReason.TOO_MANY_PAGES,
                    detail=f"the image has {frames} pages; the limit is {limits.max_pages}",
                )
        return ExtractedDocument(
            media_type=media_type,
            blocks=(),
            page_count=frames,
            pages_without_text=tuple(range(1, frames + 1)),
        )
