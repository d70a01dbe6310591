"""The text-layer judge's own rules and bounds: what text is plausible, which pages are rendered, how large the
render is, and the per-page and per-document budgets of image pixels a check may decode."""

import io
from typing import Any

import pypdfium2 as pdfium
import pytest

from shared.adapters.parsers import pdf_text_layer
from shared.adapters.parsers.pdf import PDF_TYPE, PdfParser
from shared.domain.document import Block, BlockKind, DoubtfulTextLayer, ExtractedDocument, ExtractionLimits, Location
from shared.domain.recognition import BoundingBox, RecognitionResult, RecognizedLine, RecognizedPage
from shared.domain.recognized_layout import with_recognition
from shared.domain.usage import Usage
from shared.services.recognition import recognition_plan
from tests.builders import text_layers

LIMITS = ExtractionLimits()


def extracted(content: bytes) -> ExtractedDocument:
    outcome = PdfParser().parse(content, LIMITS)
    assert isinstance(outcome, ExtractedDocument), outcome
    return outcome


def ocr_pages(document: ExtractedDocument) -> tuple[int, ...]:
    return recognition_plan(PDF_TYPE, document, every_page=False).ocr_pages


def test_a_doubted_layer_is_recorded_with_its_page_and_reason() -> None:
    document = extracted(text_layers.lost_cjk_layer_scan())
    assert [layer.page for layer in document.doubtful_text_layers] == [1]
    assert document.doubtful_text_layers[0].reason.startswith("text layer covers ")
    good = extracted(text_layers.good_layer_scan(photo=True))
    assert good.doubtful_text_layers == ()


def doubted_document() -> ExtractedDocument:
    return ExtractedDocument(
        media_type=PDF_TYPE,
        blocks=(
            Block(kind=BlockKind.PARAGRAPH, text="2020 2021", location=Location(page=1)),
            Block(kind=BlockKind.PARAGRAPH, text="T h e s e", location=Location(page=2)),
        ),
        page_count=3,
        pages_without_text=(3,),
        doubtful_text_layers=(
            DoubtfulTextLayer(page=1, reason="text layer covers 11% of the inked area"),
            DoubtfulTextLayer(page=2, reason="text layer implausible: 100% one-letter words"),
        ),
    )


def test_doubted_pages_are_read_with_the_pages_without_text() -> None:
    assert ocr_pages(doubted_document()) == (1, 2, 3)


def test_a_doubted_layer_gives_way_to_ocr_text_and_stays_where_ocr_returned_none() -> None:
    # Given OCR that read page 1 and returned page 2 blank
    line = RecognizedLine(
        text="Water bureau annual report", box=BoundingBox(left=0.1, top=0.1, width=0.5, height=0.02), confidence=0.9
    )
    result = RecognitionResult(
        engine="fake",
        pages=(RecognizedPage(page=1, lines=(line,)), RecognizedPage(page=2, lines=())),
        usage=Usage(provider="fake", operation="read", priced=False, pages=2),
    )
    # When its reading is merged
    merged = with_recognition(
        doubted_document(), LIMITS, read_pages=(1, 2, 3), result=result, description=None, notes=()
    )
    # Then page 1's layer is replaced, page 2 keeps its layer and is still doubted
    assert [(block.location.page, block.text) for block in merged.blocks] == [
        (1, "Water bureau annual report"),
        (2, "T h e s e"),
    ]
    assert [layer.page for layer in merged.doubtful_text_layers] == [2]


class Rendered:
    """Records the size of every bitmap PDFium renders."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sizes: list[tuple[int, int]] = []
        original = pdfium.PdfPage.render

        def render(page: Any, *arguments: Any, **keywords: Any) -> Any:
            bitmap = original(page, *arguments, **keywords)
            self.sizes.append((bitmap.width, bitmap.height))
            return bitmap

        monkeypatch.setattr(pdfium.PdfPage, "render", render)


def test_only_a_page_that_looks_like_a_scan_is_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given typeset pages whose ink is not all text, and a scan (built before PDFium's renders are counted)
    typeset = [text_layers.photo_page(), text_layers.full_bleed_photo_page(), text_layers.chart_page()]
    scan = text_layers.good_layer_scan()
    rendered = Rendered(monkeypatch)
    # When they are parsed
    for content in typeset:
        extracted(content)
    # Then none of the typeset pages is rendered; the scan is, once
    assert rendered.sizes == []
    extracted(scan)
    assert len(rendered.sizes) == 1


def test_the_render_is_bounded_in_pixels_however_large_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the lost-layer scan on a page 140 inches wide
    content = text_layers.lost_cjk_layer_scan(scale=17)
    rendered = Rendered(monkeypatch)
    # When it is judged
    extracted(content)
    # Then the render stays within its pixel bound
    assert rendered.sizes
    assert all(width * height <= pdf_text_layer.RENDER_PIXELS for width, height in rendered.sizes)


SCAN_PIXELS = round(210 / 25.4 * text_layers.SCAN_DPI) * round(297 / 25.4 * text_layers.SCAN_DPI)


def test_past_the_documents_image_budget_pages_are_trusted_unchecked_and_it_is_said(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a budget of image pixels that one scanned page uses up
    monkeypatch.setattr(pdf_text_layer, "MAX_CHECKED_IMAGE_PIXELS", int(SCAN_PIXELS * 1.5))
    content = two_pages(text_layers.good_layer_scan(), text_layers.lost_cjk_layer_scan())
    rendered = Rendered(monkeypatch)
    # When a document of two such scans is parsed
    document = extracted(content)
    # Then only the first is rendered; the second is trusted, and the warning says it was not checked
    assert len(rendered.sizes) == 1
    assert ocr_pages(document) == ()
    assert any("text layers of pages 2 were not checked" in warning for warning in document.warnings)


def test_a_page_whose_image_is_over_the_page_bound_is_not_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a bound on one page's image pixels under the scan's
    monkeypatch.setattr(pdf_text_layer, "MAX_PAGE_IMAGE_PIXELS", SCAN_PIXELS // 2)
    content = text_layers.lost_cjk_layer_scan()
    rendered = Rendered(monkeypatch)
    # When it is parsed, then the page is not rendered, and that is said
    document = extracted(content)
    assert rendered.sizes == []
    assert any("text layers of pages 1 were not checked" in warning for warning in document.warnings)


def two_pages(first: bytes, second: bytes) -> bytes:
    merged = pdfium.PdfDocument.new()
    for content in (first, second):
        merged.import_pages(pdfium.PdfDocument(content))
    buffer = io.BytesIO()
    merged.save(buffer)
    return buffer.getvalue()


@pytest.mark.parametrize(
    "text",
    [
        "Revenue grew twelve percent in the third quarter, and a new plant opened in I-95 county. " * 4,
        "Let x be a real number and y = f(x) where f is a map from A to B; then x < y and y < z. " * 3,
        "水利局年度报告降雨量增加百分之水库灌溉乡镇检查员认证大坝服务地下水位东部西部季度公报" * 3,
        "水 利 局 年 度 报 告 降 雨 量 增 加 百 分 之 水 库 灌 溉 乡 镇 检 查 员 认 证 大 坝 服 务",
        "• Bullet one with words\n• Bullet two with more words\n" * 6,
        " ".join(f"{number} {'ABCD'[number % 4]}" for number in range(1, 41)),
        "Let a b c be the sides of a triangle, and x y z its angles in the plane P. " * 3,
    ],
    ids=["prose", "formulas", "chinese", "spaced-chinese", "bullets", "answer-key", "variables"],
)
def test_text_a_person_wrote_is_plausible(text: str) -> None:
    assert pdf_text_layer.implausibility(text) is None


def test_letters_spaced_apart_are_implausible() -> None:
    reason = pdf_text_layer.implausibility("T H E S E  S E C R E T  M I N U T E S  R E C O R D " * 3)
    assert reason == "text layer implausible: 100% one-letter words (letters spaced apart)"


def test_a_layer_of_unmapped_glyphs_is_implausible() -> None:
    text = "\ufffd\ufffd\ue001\ue002 \x03\x04\x05 ab " * 10
    reason = pdf_text_layer.implausibility(text)
    assert reason is not None and reason.startswith("text layer implausible: ")
    assert "unmapped" in reason
