"""Images before OCR: checked to be what they claim and bounded (pixels, frames) from the header alone;
every page listed for OCR, nothing invented as text."""

import io
import struct
import zlib

import pytest

from shared.adapters.parsers.image import MAX_IMAGE_PIXELS, ImageParser
from shared.domain.document import ExtractedDocument, ExtractionFailure, ExtractionLimits
from shared.domain.files import FailureReason
from tests.builders.images import picture


def png_declaring(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00")) + chunk(b"IEND", b"")


@pytest.mark.parametrize(
    ("format_name", "media_type"), [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("TIFF", "image/tiff")]
)
def test_an_image_is_one_page_without_text_for_ocr(format_name: str, media_type: str) -> None:
    outcome = ImageParser().parse(picture(format_name), ExtractionLimits())
    assert isinstance(outcome, ExtractedDocument)
    assert (outcome.media_type, outcome.blocks, outcome.page_count, outcome.pages_without_text) == (
        media_type,
        (),
        1,
        (1,),
    )


def test_each_frame_of_a_tiff_is_a_page() -> None:
    outcome = ImageParser().parse(picture("TIFF", frames=3), ExtractionLimits())
    assert isinstance(outcome, ExtractedDocument)
    assert (outcome.page_count, outcome.pages_without_text) == (3, (1, 2, 3))


def test_too_many_frames_are_refused_naming_both_counts() -> None:
    outcome = ImageParser().parse(picture("TIFF", frames=4), ExtractionLimits(max_pages=3))
    assert isinstance(outcome, ExtractionFailure)
    assert (outcome.reason, outcome.detail) == (FailureReason.TOO_MANY_PAGES, "the image has 4 pages; the limit is 3")


@pytest.mark.parametrize(("width", "height"), [(10_000, 7_000), (40_000, 40_000)])
def test_a_canvas_past_the_pixel_limit_is_refused_from_its_header(width: int, height: int) -> None:
    assert width * height > MAX_IMAGE_PIXELS
    outcome = ImageParser().parse(png_declaring(width, height), ExtractionLimits())
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.TOO_LARGE and f"{MAX_IMAGE_PIXELS:,}" in outcome.detail


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, b"GIF89a" + b"\x00" * 40, b"<svg/>"])
def test_what_is_not_an_accepted_image_is_malformed(content: bytes) -> None:
    outcome = ImageParser().parse(content, ExtractionLimits())
    assert isinstance(outcome, ExtractionFailure) and outcome.reason is FailureReason.MALFORMED


@pytest.mark.slow
def test_a_small_first_page_does_not_vouch_for_a_huge_second_one() -> None:
    from PIL import Image

    small, huge = Image.new("1", (10, 10), 1), Image.new("1", (20_000, 20_000), 1)
    buffer = io.BytesIO()
    small.save(buffer, format="TIFF", save_all=True, append_images=[huge], compression="group4")
    assert len(buffer.getvalue()) < 200_000  # a few kilobytes declaring 400 megapixels
    outcome = ImageParser().parse(buffer.getvalue(), ExtractionLimits())
    assert isinstance(outcome, ExtractionFailure)
    assert outcome.reason is FailureReason.TOO_LARGE and "20000x20000" in outcome.detail


def test_frames_are_bounded_by_what_ocr_reads_per_document(monkeypatch: pytest.MonkeyPatch) -> None:
    # An image's pages cannot be cut: an engine reads (and Textract bills) every frame, so the OCR page
    # bound caps them even where the extraction page limit is higher.
    from shared.adapters.parsers import image

    monkeypatch.setattr(image, "MAX_OCR_PAGES", 2)
    outcome = ImageParser().parse(picture("TIFF", frames=3, size=(8, 8)), ExtractionLimits(max_pages=10_000))
    assert isinstance(outcome, ExtractionFailure)
    assert (outcome.reason, outcome.detail) == (FailureReason.TOO_MANY_PAGES, "the image has 3 pages; the limit is 2")


def test_a_phone_jpeg_with_an_embedded_preview_is_one_jpeg_page() -> None:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), "white").save(
        buffer, format="MPO", save_all=True, append_images=[Image.new("RGB", (16, 12))]
    )
    outcome = ImageParser().parse(buffer.getvalue(), ExtractionLimits())
    assert isinstance(outcome, ExtractedDocument)
    assert (outcome.media_type, outcome.page_count) == ("image/jpeg", 1)
