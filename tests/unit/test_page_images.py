"""Page images: the sizing rule, the keys and the PNG header read back from a kept drawing, the signed read's type,
and the service over the fakes with the real rasterizer in the real sandbox (tests/integration/test_page_images_api.py
runs it over HTTP, PostgreSQL and moto's S3)."""

import io
import math
import struct
import zlib
from typing import Any
from uuid import UUID, uuid4

import pytest
from PIL import Image, PngImagePlugin

from shared.adapters.renderers.page_image import PdfiumPageRasterizer
from shared.domain.errors import InvalidRequest, NotFound, UnsupportedMediaType, VersionDeleted
from shared.domain.exports import RenderFailed
from shared.domain.page_images import (
    DRAWING_REVISION,
    MAX_IMAGE_UPSCALE,
    MAX_PAGE_PIXELS,
    MAX_PAGE_SIDE,
    MAX_PDF_UPSCALE,
    PAGE_COUNT_KEYWORD,
    DrawnPage,
    PageOutcome,
    PageOutOfRange,
    fit_page,
    page_image_filename,
    page_image_key,
    parse_page_image_key,
    read_png_header,
)
from shared.domain.uploads import SAFE_DOWNLOAD_TYPE, document_key, signed_read_type, storage_key
from shared.sandbox import sandboxed
from shared.services import page_images
from shared.services.page_images import PageImages
from shared.services.upload_completion import Completion
from tests.builders.images import picture
from tests.builders.pdf import pdf_of
from tests.fakes import Fakes, principal

A4 = (595.28, 841.89)


# --- sizing ------------------------------------------------------------------------------------------------


def test_an_a4_page_is_drawn_1600_pixels_tall_with_its_aspect_ratio() -> None:
    fit = fit_page(*A4, max_upscale=MAX_PDF_UPSCALE)
    assert fit.height == MAX_PAGE_SIDE
    assert abs(fit.width / fit.height - A4[0] / A4[1]) < 1 / MAX_PAGE_SIDE
    # Within a pixel of the fit: the narrower side's whole pixel sets the scale, the longer rounds up to 1600.
    assert MAX_PAGE_SIDE - 1 < A4[1] * fit.scale <= MAX_PAGE_SIDE


def test_a_small_page_is_enlarged_at_most_twice_and_an_image_not_at_all() -> None:
    receipt = fit_page(100, 50, max_upscale=MAX_PDF_UPSCALE)
    assert (receipt.width, receipt.height) == (200, 100) and receipt.scale == pytest.approx(2.0)
    image = fit_page(640, 480, max_upscale=MAX_IMAGE_UPSCALE)
    assert (image.width, image.height) == (640, 480)


def test_a_page_claiming_200_inches_is_drawn_within_the_bound() -> None:
    fit = fit_page(14_400, 14_400, max_upscale=MAX_PDF_UPSCALE)
    assert (fit.width, fit.height) == (MAX_PAGE_SIDE, MAX_PAGE_SIDE)
    sliver = fit_page(14_400, 1, max_upscale=MAX_PDF_UPSCALE)
    assert (sliver.width, sliver.height) == (MAX_PAGE_SIDE, 1)  # a sliver is still at least a pixel


def test_the_area_bound_holds_where_the_side_does_not_bind() -> None:
    fit = fit_page(3000, 3000, max_upscale=1.0, max_side=10_000, max_pixels=MAX_PAGE_PIXELS)
    assert fit.width * fit.height <= MAX_PAGE_PIXELS
    assert fit.width == fit.height == math.isqrt(MAX_PAGE_PIXELS)


@pytest.mark.parametrize("size", [(0, 792), (612, 0), (-612, 792), (math.inf, 792), (math.nan, 792)])
def test_a_page_with_no_drawable_size_is_refused(size: tuple[float, float]) -> None:
    with pytest.raises(ValueError, match="no drawable size"):
        fit_page(*size, max_upscale=MAX_PDF_UPSCALE)


@pytest.mark.parametrize("width", [1.0, 7.3, 99.99, 595.28, 612, 1000.5, 1600, 1601, 3508.7, 14_400, 1e9])
@pytest.mark.parametrize("height", [1.0, 3.5, 841.89, 792, 1599.9, 4000, 2e7])
def test_pdfiums_rounding_never_passes_the_fitted_size(width: float, height: float) -> None:
    fit = fit_page(width, height, max_upscale=MAX_PDF_UPSCALE)
    # PDFium draws ceil(side * scale) pixels a side.
    drawn = (max(1, math.ceil(width * fit.scale)), max(1, math.ceil(height * fit.scale)))
    assert drawn[0] <= fit.width <= MAX_PAGE_SIDE and drawn[1] <= fit.height <= MAX_PAGE_SIDE
    assert fit.width * fit.height <= MAX_PAGE_PIXELS
    assert fit.scale <= MAX_PDF_UPSCALE


# --- keys, names and the kept drawing's header -------------------------------------------------------------


def test_a_page_image_key_is_derived_from_its_original_and_parses_back() -> None:
    file_id, version_id = uuid4(), uuid4()
    original = storage_key("acme", file_id, version_id)
    key = page_image_key(original, 7)
    assert key == f"derived/{original}/pages/page-7-{MAX_PAGE_SIDE}-r{DRAWING_REVISION}.png"
    parts = parse_page_image_key(key)
    assert parts is not None and (parts.tenant_id, parts.file_id, parts.version_id) == ("acme", file_id, version_id)


@pytest.mark.parametrize(
    "key",
    [
        document_key("acme", UUID(int=1), UUID(int=2), 1),
        f"derived/{storage_key('acme', UUID(int=1), UUID(int=2))}/pages/page-0-1600.png",
        f"derived/{storage_key('acme', UUID(int=1), UUID(int=2))}/pages/page-1-1600.png.json",
        f"{storage_key('acme', UUID(int=1), UUID(int=2))}/pages/page-1-1600.png",
        "derived/tenants/acme/not-a-key/pages/page-1-1600.png",
    ],
)
def test_other_keys_are_not_page_images(key: str) -> None:
    assert parse_page_image_key(key) is None


def test_a_page_image_downloads_under_the_originals_name_with_its_page() -> None:
    assert page_image_filename("Annual report.pdf", 3) == "Annual report page 3.png"


def png(size: tuple[int, int] = (30, 20), *, page_count: int | None = 4) -> bytes:
    info = PngImagePlugin.PngInfo()
    if page_count is not None:
        info.add_text(PAGE_COUNT_KEYWORD, str(page_count))
    buffer = io.BytesIO()
    Image.new("RGB", size, "white").save(buffer, format="PNG", pnginfo=info)
    return buffer.getvalue()


def test_a_kept_drawing_says_its_size_and_the_documents_page_count_from_its_first_bytes() -> None:
    header = read_png_header(png((1131, 1600), page_count=12)[:256])
    assert header is not None and (header.width, header.height, header.page_count) == (1131, 1600, 12)
    untold = read_png_header(png(page_count=None))
    assert untold is not None and untold.page_count is None


def test_bytes_that_are_not_a_whole_png_header_are_not_read_as_one() -> None:
    good = png()
    assert read_png_header(b"GIF89a" + good[6:]) is None
    assert read_png_header(good[:20]) is None  # cut inside IHDR
    broken = bytearray(good)
    broken[20] ^= 0xFF  # a width byte: the CRC no longer matches
    assert read_png_header(bytes(broken)) is None
    no_ihdr = good[:8] + _chunk(b"tEXt", b"x\x00y") + good[8:]
    assert read_png_header(no_ihdr) is None


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def test_a_signed_read_serves_opaque_bytes_or_a_png_and_nothing_else() -> None:
    assert signed_read_type(None) == SAFE_DOWNLOAD_TYPE
    assert signed_read_type("image/png") == "image/png"
    for asked in ("text/html", "image/svg+xml", "image/jpeg", "application/pdf"):
        with pytest.raises(ValueError, match="image/png"):
            signed_read_type(asked)


# --- the service over the fakes, with the real rasterizer in the real sandbox --------------------------------


def stored(fakes: Fakes, filename: str, media_type: str, content: bytes, collection: str = "docs") -> UUID:
    ticket = fakes.files().start_upload(
        principal("acme", collection),
        collection_id=collection,
        filename=filename,
        media_type=media_type,
        byte_size=len(content),
    )
    landed = fakes.content.post(ticket.upload, content)
    assert fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size) is Completion.STORED
    return ticket.file_id


def derived(fakes: Fakes) -> list[str]:
    return sorted({stored.key for stored in fakes.content.object_versions("derived/")})


def service(fakes: Fakes) -> PageImages:
    return PageImages(fakes.files(), fakes.content, PdfiumPageRasterizer(), max_original_bytes=fakes.max_bytes)


class CountedRuns:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return sandboxed(*args, **kwargs)


def test_a_page_is_drawn_once_kept_under_the_originals_derived_prefix_and_signed_as_png(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fakes = Fakes()
    file_id = stored(fakes, "two.pdf", "application/pdf", pdf_of("first page", "second page"))
    runs = CountedRuns()
    monkeypatch.setattr(page_images, "sandboxed", runs)
    first = service(fakes).page(principal("acme", "docs"), file_id, 2, version_id=None)
    again = service(fakes).page(principal("acme", "docs"), file_id, 2, version_id=None)
    assert runs.calls == 1
    assert (first.page, first.page_count, first.height) == (2, 2, MAX_PAGE_SIDE)
    assert (again.page_count, again.width, again.height) == (first.page_count, first.width, first.height)
    assert first.url is not None and "/pages/page-2-1600-r1.png" in first.url and "type=image%2Fpng" in first.url
    kept = derived(fakes)
    assert len(kept) == 1 and kept[0].endswith("/pages/page-2-1600-r1.png")


def test_a_store_that_cannot_sign_gets_the_drawing_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    fakes = Fakes()
    file_id = stored(fakes, "two.pdf", "application/pdf", pdf_of("first page", "second page"))
    monkeypatch.setattr(fakes.content, "signed_read", lambda *args, **kwargs: None)
    for _ in range(2):  # drawn, then kept
        image = service(fakes).page(principal("acme", "docs"), file_id, 1, version_id=None)
        assert image.url is None and image.content is not None
        assert Image.open(io.BytesIO(image.content)).size == (image.width, image.height)


def test_a_type_without_pages_a_page_past_the_end_and_an_unentitled_caller_are_refused() -> None:
    fakes = Fakes()
    text = stored(fakes, "notes.txt", "text/plain", b"plain words")
    pdf = stored(fakes, "one.pdf", "application/pdf", pdf_of("only page"))
    pages = service(fakes)
    with pytest.raises(UnsupportedMediaType, match="page images exist for PDFs and images"):
        pages.page(principal("acme", "docs"), text, 1, version_id=None)
    with pytest.raises(InvalidRequest, match="page 3 of a 1-page document"):
        pages.page(principal("acme", "docs"), pdf, 3, version_id=None)
    with pytest.raises(InvalidRequest, match="from 1"):
        pages.page(principal("acme", "docs"), pdf, 0, version_id=None)
    with pytest.raises(NotFound):
        pages.page(principal("acme", "other"), pdf, 1, version_id=None)
    assert derived(fakes) == []


class ForgingRasterizer(PdfiumPageRasterizer):
    """A rasterizer a hostile file subverted: it says one size and sends a PNG of another."""

    def rasterize(self, content: bytes, media_type: str, page: int) -> PageOutcome:
        return DrawnPage(png=png((10, 10), page_count=1), page=page, page_count=1, width=1600, height=1600)


def test_a_drawing_that_is_not_what_the_child_says_is_refused_and_not_kept() -> None:
    fakes = Fakes()
    file_id = stored(fakes, "one.pdf", "application/pdf", pdf_of("only page"))
    forged = PageImages(fakes.files(), fakes.content, ForgingRasterizer(), max_original_bytes=fakes.max_bytes)
    with pytest.raises(RenderFailed, match="recorded for the operators"):
        forged.page(principal("acme", "docs"), file_id, 1, version_id=None)
    assert derived(fakes) == []


def test_a_decompression_bomb_is_a_sentence_not_a_crash() -> None:
    fakes = Fakes()
    buffer = io.BytesIO()
    Image.new("1", (20_000, 20_000)).save(buffer, format="PNG")  # 400 megapixels in about 50 KB
    file_id = stored(fakes, "bomb.png", "image/png", buffer.getvalue())
    with pytest.raises(RenderFailed, match="60,000,000 pixels") as refused:
        service(fakes).page(principal("acme", "docs"), file_id, 1, version_id=None)
    assert not refused.value.retryable


# --- the rasterizer itself (in this process: the sandbox is the service's business) -------------------------


def test_a_tiffs_frames_are_its_pages() -> None:
    tiff = picture("TIFF", frames=3, size=(200, 100))
    drawn = PdfiumPageRasterizer().rasterize(tiff, "image/tiff", 3)
    assert isinstance(drawn, DrawnPage) and (drawn.page_count, drawn.width, drawn.height) == (3, 200, 100)
    assert Image.open(io.BytesIO(drawn.png)).getpixel((0, 0)) == 255 - 40 * 2  # the third frame's grey
    assert PdfiumPageRasterizer().rasterize(tiff, "image/tiff", 4) == PageOutOfRange(page=4, page_count=3)


def test_a_photo_is_drawn_the_way_its_exif_orientation_shows_it() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # stored sideways: shown turned a quarter clockwise
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), "white").save(buffer, format="JPEG", exif=exif.tobytes())
    drawn = PdfiumPageRasterizer().rasterize(buffer.getvalue(), "image/jpeg", 1)
    assert isinstance(drawn, DrawnPage) and (drawn.width, drawn.height) == (48, 64)


def test_a_large_image_is_drawn_down_to_the_bound() -> None:
    drawn = PdfiumPageRasterizer().rasterize(picture("PNG", size=(4000, 1000)), "image/png", 1)
    assert isinstance(drawn, DrawnPage) and (drawn.width, drawn.height) == (MAX_PAGE_SIDE, 400)


@pytest.mark.parametrize("moment", ["reading", "drawing"])
def test_a_deletion_that_lands_while_a_page_is_read_or_drawn_is_a_deleted_answer_not_a_500_or_a_link(
    monkeypatch: pytest.MonkeyPatch, moment: str
) -> None:
    # Given a page whose file an admin deletes while the request is at it: as the original is read (on AWS a
    # withdrawn original answers AccessDenied), or while it is drawn
    fakes = Fakes()
    file_id = stored(fakes, "two.pdf", "application/pdf", pdf_of("first", "second"))

    def refused(*args: Any, **kwargs: Any) -> bytes:
        fakes.metadata.begin_delete_file("acme", file_id)
        raise PermissionError("AccessDenied")

    def drawn_meanwhile(*args: Any, **kwargs: Any) -> Any:
        answer = sandboxed(*args, **kwargs)
        fakes.metadata.begin_delete_file("acme", file_id)
        return answer

    if moment == "reading":
        monkeypatch.setattr(fakes.content, "get", refused)
    else:
        monkeypatch.setattr(page_images, "sandboxed", drawn_meanwhile)
    # When the page is asked for, then the answer says the version was deleted, and no link is handed out
    with pytest.raises(VersionDeleted):
        service(fakes).page(principal("acme", "docs"), file_id, 1, version_id=None)
