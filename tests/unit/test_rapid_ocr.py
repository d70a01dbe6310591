"""The local OCR engine for real: RapidOCR's bundled models read generated scans in every orientation, only
the pages asked for, within bounds; what it cannot read is a RecognitionFailed, never an empty success."""

import io

import pytest

from shared.adapters.local.rapid_ocr import MAX_IMAGE_PIXELS, OcrLimits, RapidOcr
from shared.domain.errors import RecognitionFailed
from shared.domain.recognition import RecognitionResult
from shared.domain.recognized_layout import turned
from shared.ports import OcrSource

# Each test here runs the real model on the CPU.
pytestmark = pytest.mark.slow

LINES = ("Invoice QX-7731 settles the kiln contract", "Harrowgate Ceramics paid 18,240 euros")


def page_image(rotation: int = 0) -> bytes:
    """Two lines of text on a white page, turned `rotation` degrees clockwise, as a PNG."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("L", (1400, 900), 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=40)
    for index, line in enumerate(LINES):
        draw.text((120, 200 + 90 * index), line, fill=0, font=font)
    turned_image = image.rotate(-rotation, expand=True)
    buffer = io.BytesIO()
    turned_image.save(buffer, format="PNG")
    return buffer.getvalue()


def read(content: bytes, media_type: str = "image/png", pages: tuple[int, ...] | None = None) -> RecognitionResult:
    source = OcrSource(
        media_type=media_type,
        pages=pages,
        page_count=None,
        storage_key="k",
        storage_version_id=None,
        read=lambda: content,
    )
    return RapidOcr().start(source)


@pytest.fixture(scope="module")
def upright() -> RecognitionResult:
    return read(page_image(0))


def test_lines_are_read_with_boxes_and_confidences(upright: RecognitionResult) -> None:
    page = upright.pages[0]
    assert [line.text for line in page.lines] == list(LINES)
    assert page.rotation_degrees == 0 and all(line.confidence > 0.9 for line in page.lines)
    first, second = (line.box for line in page.lines)
    # Where the lines were drawn: x from 120 of 1400 pixels, y from 200 and 290 of 900.
    assert first.left == pytest.approx(120 / 1400, abs=0.02) and first.top == pytest.approx(200 / 900, abs=0.03)
    assert second.top > first.bottom - 0.01
    assert upright.usage.provider == "rapidocr" and upright.usage.pages == 1 and upright.usage.priced is False


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_a_turned_page_is_read_upright_and_its_boxes_stay_on_the_displayed_page(
    rotation: int, upright: RecognitionResult
) -> None:
    result = read(page_image(rotation))
    page = result.pages[0]
    # Turning it back (clockwise by what remains of a full turn) undoes the scan's turn.
    assert page.rotation_degrees == (360 - rotation) % 360
    assert [line.text for line in page.lines] == list(LINES)
    for line, reference in zip(page.lines, upright.pages[0].lines, strict=True):
        expected = turned(reference.box, rotation)  # the upright box, where the turned scan shows it
        assert line.box.left == pytest.approx(expected.left, abs=0.02)
        assert line.box.top == pytest.approx(expected.top, abs=0.02)
        assert line.box.width == pytest.approx(expected.width, abs=0.03)
        assert line.box.height == pytest.approx(expected.height, abs=0.03)


def test_only_the_pages_asked_for_are_rendered_and_read() -> None:
    from PIL import Image

    pages = [Image.open(io.BytesIO(page_image(0))), Image.new("L", (1400, 900), 255)]
    buffer = io.BytesIO()
    pages[0].save(buffer, format="PDF", save_all=True, append_images=pages[1:], resolution=150)
    result = read(buffer.getvalue(), "application/pdf", pages=(1,))
    assert [page.page for page in result.pages] == [1]
    assert "QX-7731" in result.pages[0].lines[0].text
    blank = read(buffer.getvalue(), "application/pdf", pages=(2,))
    # A blank page: read, found nothing, and says so with confidence 0 (never an optimistic default).
    assert [page.page for page in blank.pages] == [2] and blank.pages[0].lines == () and blank.confidence == 0.0


def test_a_page_that_does_not_exist_is_refused() -> None:
    with pytest.raises(RecognitionFailed, match="does not exist"):
        read(_one_page_pdf(), "application/pdf", pages=(3,))


def test_an_image_declaring_too_many_pixels_is_refused_before_it_is_decoded() -> None:
    bomb = _png_header(width=20_000, height=20_000)
    assert MAX_IMAGE_PIXELS < 20_000 * 20_000
    with pytest.raises(RecognitionFailed, match="megapixels"):
        read(bomb)


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\nnot really", b"%PDF-1.7 broken"])
def test_damaged_input_is_a_recognition_failure_not_an_empty_result(content: bytes) -> None:
    media_type = "application/pdf" if content.startswith(b"%PDF") else "image/png"
    with pytest.raises(RecognitionFailed) as failure:
        read(content, media_type, pages=(1,) if media_type == "application/pdf" else None)
    # A sentence of ours for the file's owner, naming the fix: never the library's own words.
    assert failure.value.detail in (
        "the PDF could not be opened for OCR: re-save it and upload it again",
        "the image could not be decoded: re-save it as PNG or JPEG and upload it again",
    )


def test_the_wall_clock_is_enforced_from_outside_the_engine() -> None:
    engine = RapidOcr(OcrLimits(seconds_per_page=0.01, min_timeout_seconds=0.05))
    source = OcrSource(
        media_type="image/png",
        pages=None,
        page_count=1,
        storage_key="k",
        storage_version_id=None,
        read=lambda: page_image(0),
    )
    with pytest.raises(RecognitionFailed, match="longer than"):
        engine.start(source)


def test_too_many_pages_are_refused_naming_the_limit() -> None:
    engine = RapidOcr(OcrLimits(max_pages=2))
    source = OcrSource(
        media_type="application/pdf",
        pages=(1, 2, 3),
        page_count=3,
        storage_key="k",
        storage_version_id=None,
        read=lambda: b"",
    )
    with pytest.raises(RecognitionFailed, match="the limit is 2"):
        engine.start(source)


def _one_page_pdf() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("L", (100, 100), 255).save(buffer, format="PDF")
    return buffer.getvalue()


def _png_header(*, width: int, height: int) -> bytes:
    """A PNG whose header claims a canvas of width x height and whose data is one tiny zlib stream."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00")) + chunk(b"IEND", b"")
