"""TextractOcr against real textract and s3 clients whose calls botocore's Stubber answers.

The responses are shaped like Textract's documented output: Blocks of PAGE, LINE, WORD, TABLE, CELL and
MERGED_CELL with CHILD relationships, Geometry (BoundingBox and Polygon), Confidence in percent,
EntityTypes, Page, DocumentMetadata.Pages, JobStatus and NextToken.
"""

import io
import re
from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import boto3
import pypdfium2 as pdfium
import pytest
from botocore.exceptions import ClientError, ConnectionClosedError
from botocore.stub import ANY, Stubber

from shared.adapters.aws import textract_ocr
from shared.adapters.aws.textract_ocr import OCR_NOT_PERMITTED, SYNC_MAX_BYTES, TextractOcr, request_token
from shared.domain.errors import CapabilityUnavailable, RecognitionFailed
from shared.domain.recognition import RecognitionJob, RecognitionResult
from shared.domain.uploads import ocr_staging_prefix, storage_key
from shared.ports import OcrProvider, OcrSource
from tests.builders.aws import Delays, offline_client

BUCKET = "quire-originals"
KEY = "tenants/t1/files/f1/versions/v1/original"
VERSION = "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY"


def textract_client() -> Any:
    return offline_client("textract")


def s3_client() -> Any:
    return offline_client("s3")


class Aws:
    """A textract and an s3 client, each with an active Stubber, and the adapter over them."""

    def __init__(self, *, analyze_tables: bool = True, max_attempts: int = 5) -> None:
        self.textract = textract_client()
        self.s3 = s3_client()
        self.textract_stub = Stubber(self.textract)
        self.s3_stub = Stubber(self.s3)
        self.delays = Delays()
        self.ocr = TextractOcr(
            self.textract,
            self.s3,
            bucket=BUCKET,
            analyze_tables=analyze_tables,
            max_attempts=max_attempts,
            sleep=self.delays,
            random=lambda: 1.0,
        )

    def __enter__(self) -> "Aws":
        self.textract_stub.activate()
        self.s3_stub.activate()
        return self

    def __exit__(self, *exc: object) -> None:
        self.textract_stub.deactivate()
        self.s3_stub.deactivate()

    def assert_all_called(self) -> None:
        self.textract_stub.assert_no_pending_responses()
        self.s3_stub.assert_no_pending_responses()


@pytest.fixture
def aws() -> Iterator[Aws]:
    with Aws() as stubbed:
        yield stubbed


def source(
    media_type: str = "application/pdf",
    *,
    pages: tuple[int, ...] | None = None,
    page_count: int | None = None,
    version: str | None = VERSION,
    content: bytes = b"",
) -> OcrSource:
    return OcrSource(
        media_type=media_type,
        pages=pages,
        page_count=page_count,
        storage_key=KEY,
        storage_version_id=version,
        read=lambda: content,
    )


class Blocks:
    """Builds Textract blocks the way the service lays them out: each page's PAGE block, then its content."""

    def __init__(self, *, with_page_numbers: bool = True) -> None:
        self.blocks: list[dict[str, Any]] = []
        self._next_id = 0
        self._pages: dict[int, dict[str, Any]] = {}
        self._with_page_numbers = with_page_numbers

    def _block(self, block_type: str, page: int, **fields: Any) -> dict[str, Any]:
        self._next_id += 1
        block: dict[str, Any] = {"BlockType": block_type, "Id": f"{block_type.lower()}-{self._next_id:04d}", **fields}
        if self._with_page_numbers:
            block["Page"] = page
        self.blocks.append(block)
        return block

    def page(self, number: int) -> "Blocks":
        self._pages[number] = self._block("PAGE", number, Geometry=geometry(0.0, 0.0, 1.0, 1.0))
        return self

    def _child_of_page(self, page: int, child: dict[str, Any]) -> None:
        relationships = self._pages[page].setdefault("Relationships", [{"Type": "CHILD", "Ids": []}])
        relationships[0]["Ids"].append(child["Id"])

    def line(
        self,
        page: int,
        *words: tuple[str, float, float],
        top: float,
        height: float = 0.02,
        confidence: float = 99.1,
        reading: int = 0,
    ) -> list[str]:
        """A LINE of WORDs, each given as (text, left, width); returns the WORD ids."""
        word_ids = []
        word_blocks = []
        for text, left, width in words:
            word = {
                "BlockType": "WORD",
                "Id": "",
                "Text": text,
                "TextType": "PRINTED",
                "Confidence": confidence,
                "Geometry": geometry(left, top, width, height, reading),
            }
            word_blocks.append(word)
        left = min(left for _, left, _ in words)
        right = max(left + width for _, left, width in words)
        line = self._block(
            "LINE",
            page,
            Text=" ".join(text for text, _, _ in words),
            Confidence=confidence,
            Geometry=geometry(left, top, right - left, height, reading),
        )
        self._child_of_page(page, line)
        for word in word_blocks:
            created = self._block("WORD", page, **{k: v for k, v in word.items() if k not in ("BlockType", "Id")})
            word_ids.append(created["Id"])
        line["Relationships"] = [{"Type": "CHILD", "Ids": word_ids}]
        return word_ids

    def table(
        self,
        page: int,
        rows: list[list[str]],
        *,
        left: float,
        top: float,
        cell_width: float = 0.2,
        row_height: float = 0.04,
        header_rows: int = 1,
        word_confidence: float = 95.0,
        merged: tuple[int, int, int, int] | None = None,
    ) -> None:
        """A TABLE of CELLs whose WORDs are also the words of LINEs (as Textract reports a table's text).

        `merged` is (row, column, row span, column span) of a MERGED_CELL over the cells it covers.
        """
        cell_ids: dict[tuple[int, int], str] = {}
        table_width = cell_width * len(rows[0])
        table = self._block(
            "TABLE",
            page,
            Confidence=97.5,
            Geometry=geometry(left, top, table_width, row_height * len(rows)),
            EntityTypes=["STRUCTURED_TABLE"],
        )
        self._child_of_page(page, table)
        for row_index, row in enumerate(rows, start=1):
            for column_index, text in enumerate(row, start=1):
                cell_left = left + cell_width * (column_index - 1)
                cell_top = top + row_height * (row_index - 1)
                word_ids: list[str] = []
                if text:
                    word_ids = self.line(
                        page,
                        (text, cell_left + 0.01, cell_width * 0.5),
                        top=cell_top + 0.01,
                        confidence=word_confidence,
                    )
                cell: dict[str, Any] = {
                    "Confidence": 90.0,
                    "RowIndex": row_index,
                    "ColumnIndex": column_index,
                    "RowSpan": 1,
                    "ColumnSpan": 1,
                    "Geometry": geometry(cell_left, cell_top, cell_width, row_height),
                }
                if word_ids:
                    cell["Relationships"] = [{"Type": "CHILD", "Ids": word_ids}]
                if row_index <= header_rows:
                    cell["EntityTypes"] = ["COLUMN_HEADER"]
                cell_ids[(row_index, column_index)] = self._block("CELL", page, **cell)["Id"]
        relationships = [{"Type": "CHILD", "Ids": list(cell_ids.values())}]
        if merged is not None:
            first_row, first_column, row_span, column_span = merged
            covered = [
                cell_ids[(r, c)]
                for r in range(first_row, first_row + row_span)
                for c in range(first_column, first_column + column_span)
            ]
            merged_cell = self._block(
                "MERGED_CELL",
                page,
                Confidence=88.0,
                RowIndex=first_row,
                ColumnIndex=first_column,
                RowSpan=row_span,
                ColumnSpan=column_span,
                Geometry=geometry(left, top, cell_width * column_span, row_height * row_span),
                Relationships=[{"Type": "CHILD", "Ids": covered}],
            )
            relationships.append({"Type": "MERGED_CELL", "Ids": [merged_cell["Id"]]})
        table["Relationships"] = relationships


def geometry(left: float, top: float, width: float, height: float, reading: int = 0) -> dict[str, Any]:
    """BoundingBox and Polygon; the polygon starts at the text's own top-left corner and runs along it,
    so text read turned by `reading` degrees clockwise starts at another corner of its box."""
    right, bottom = left + width, top + height
    corners = [(left, top), (right, top), (right, bottom), (left, bottom)]
    start = {0: 0, 90: 1, 180: 2, 270: 3}[reading]
    ordered = corners[start:] + corners[:start]
    return {
        "BoundingBox": {"Width": width, "Height": height, "Left": left, "Top": top},
        "Polygon": [{"X": x, "Y": y} for x, y in ordered],
    }


def detect_response(blocks: Blocks, pages: int = 1) -> dict[str, Any]:
    return {"DocumentMetadata": {"Pages": pages}, "Blocks": blocks.blocks, "DetectDocumentTextModelVersion": "1.0"}


def job_response(
    blocks: list[dict[str, Any]],
    *,
    pages: int,
    status: str = "SUCCEEDED",
    next_token: str | None = None,
    analysis: bool = True,
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "DocumentMetadata": {"Pages": pages},
        "JobStatus": status,
        "Blocks": blocks,
        "AnalyzeDocumentModelVersion" if analysis else "DetectDocumentTextModelVersion": "1.0",
    }
    if next_token is not None:
        response["NextToken"] = next_token
    return response


def head(size: int) -> dict[str, Any]:
    return {"ContentLength": size, "ContentType": "image/png", "VersionId": VERSION}


def head_call(version: str | None = VERSION) -> dict[str, Any]:
    call = {"Bucket": BUCKET, "Key": KEY}
    if version is not None:
        call["VersionId"] = version
    return call


def get_call(job_id: str, next_token: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"JobId": job_id, "MaxResults": 1000}
    if next_token is not None:
        call["NextToken"] = next_token
    return call


def sync_image(aws: Aws, blocks: Blocks, *, version: str | None = VERSION) -> RecognitionResult:
    aws.s3_stub.add_response("head_object", head(250_000), head_call(version))
    location: dict[str, str] = {"Bucket": BUCKET, "Name": KEY}
    if version is not None:
        location["Version"] = version
    aws.textract_stub.add_response(
        "detect_document_text", detect_response(blocks), {"Document": {"S3Object": location}}
    )
    result = aws.ocr.start(source("image/png", version=version))
    assert isinstance(result, RecognitionResult)
    return result


def job(job_id: str = "job-1", *, pages: tuple[int, ...] = (1, 2, 3), staged_key: str | None = None) -> RecognitionJob:
    return RecognitionJob(engine="textract", job_id=job_id, analysis=True, pages=pages, staged_key=staged_key)


def pdf_of_widths(*widths: float) -> bytes:
    """A real PDF with one page per width, so a copy's pages can be told apart by their size."""
    document = pdfium.PdfDocument.new()
    for width in widths:
        document.new_page(width, 792)
    buffer = io.BytesIO()
    document.save(buffer)
    document.close()
    return buffer.getvalue()


def page_widths(content: bytes) -> list[float]:
    document = pdfium.PdfDocument(content)
    try:
        return [document[index].get_size()[0] for index in range(len(document))]
    finally:
        document.close()


# A single image, read at once.


def test_an_image_is_read_at_once_into_lines_with_boxes_confidences_and_usage(aws: Aws) -> None:
    blocks = Blocks(with_page_numbers=False).page(1)
    blocks.line(1, ("Invoice", 0.1, 0.12), ("2025-031", 0.23, 0.1), top=0.05, confidence=99.5)
    blocks.line(1, ("Total", 0.1, 0.08), ("€", 0.19, 0.02), ("120.00", 0.22, 0.1), top=0.5, confidence=87.25)

    result = sync_image(aws, blocks)

    aws.assert_all_called()
    [page] = result.pages
    assert page.page == 1
    assert [line.text for line in page.lines] == ["Invoice 2025-031", "Total € 120.00"]
    assert [line.confidence for line in page.lines] == pytest.approx([0.995, 0.8725])
    first = page.lines[0].box
    assert (first.left, first.top, first.width, first.height) == pytest.approx((0.1, 0.05, 0.23, 0.02))
    assert page.rotation_degrees == 0
    assert result.engine == "textract"
    assert result.usage.operation == "textract:DetectDocumentText"
    assert result.usage.priced
    assert result.usage.pages == 1


def test_an_image_without_a_stored_version_is_read_without_one(aws: Aws) -> None:
    blocks = Blocks().page(1)
    blocks.line(1, ("Hello", 0.1, 0.1), top=0.1)
    # The stubbed calls name no version: a Version/VersionId sent anyway fails the parameter check.
    result = sync_image(aws, blocks, version=None)
    aws.assert_all_called()
    assert result.pages[0].lines[0].text == "Hello"


def test_words_far_apart_on_a_line_become_separate_segments(aws: Aws) -> None:
    blocks = Blocks().page(1)
    # Word spaces of 0.01; then a gap of 0.3, fifteen times the line's height of 0.02.
    blocks.line(1, ("Net", 0.1, 0.05), ("amount", 0.16, 0.08), ("1,250.00", 0.54, 0.1), top=0.3)

    [page] = sync_image(aws, blocks).pages

    segments = page.lines[0].segments
    assert [segment.text for segment in segments] == ["Net amount", "1,250.00"]
    assert segments[0].box.left == pytest.approx(0.1)
    assert segments[0].box.right == pytest.approx(0.24)
    assert segments[1].box.left == pytest.approx(0.54)


def test_lines_below_the_minimum_confidence_are_kept_apart_as_unreadable(aws: Aws) -> None:
    blocks = Blocks().page(1)
    blocks.line(1, ("Clear", 0.1, 0.1), top=0.1, confidence=98.0)
    blocks.line(1, ("sm#dg3", 0.1, 0.1), top=0.2, confidence=31.0)
    blocks.line(1, ("borderline", 0.1, 0.1), top=0.3, confidence=50.0)

    [page] = sync_image(aws, blocks).pages

    assert [line.text for line in page.lines] == ["Clear", "borderline"]
    assert [line.text for line in page.unreadable_lines] == ["sm#dg3"]
    assert page.unreadable_lines[0].confidence == pytest.approx(0.31)
    # Still counted, at its confidence, in the page's (weighted by characters).
    assert page.confidence == pytest.approx((0.98 * 5 + 0.31 * 6 + 0.5 * 10) / 21)


def test_a_box_reaching_past_the_page_edge_is_clamped_to_it(aws: Aws) -> None:
    blocks = Blocks().page(1)
    blocks.line(1, ("Edge", -0.004, 0.1), ("text", 0.95, 0.07), top=0.99, height=0.02)

    [page] = sync_image(aws, blocks).pages

    box = page.lines[0].box
    assert box.left == 0.0
    assert box.right == pytest.approx(1.0)
    assert box.bottom == pytest.approx(1.0)


@pytest.mark.parametrize(("reading", "rotation"), [(0, 0), (90, 270), (180, 180), (270, 90)])
def test_the_page_rotation_comes_from_the_way_its_lines_run(aws: Aws, reading: int, rotation: int) -> None:
    blocks = Blocks().page(1)
    blocks.line(1, ("Turned", 0.4, 0.02), top=0.2, height=0.3, reading=reading)
    blocks.line(1, ("page", 0.45, 0.02), top=0.2, height=0.2, reading=reading)
    # One short line the other way does not outvote the rest.
    blocks.line(1, ("x", 0.1, 0.01), top=0.9, reading=(reading + 90) % 360)

    [page] = sync_image(aws, blocks).pages

    assert page.rotation_degrees == rotation


def test_a_png_over_ten_megabytes_is_refused_before_textract_is_called(aws: Aws) -> None:
    aws.s3_stub.add_response("head_object", head(SYNC_MAX_BYTES + 1), head_call())
    # No textract response is stubbed: any call to it would fail with UnStubbedResponseError.
    with pytest.raises(RecognitionFailed, match=r"at most 10 MB"):
        aws.ocr.start(source("image/png"))
    aws.assert_all_called()


def test_a_one_page_tiff_over_ten_megabytes_is_read_by_a_job(aws: Aws) -> None:
    aws.s3_stub.add_response("head_object", head(SYNC_MAX_BYTES + 1), head_call())
    aws.textract_stub.add_response(
        "start_document_analysis",
        {"JobId": "tiff-job"},
        {
            "DocumentLocation": {"S3Object": {"Bucket": BUCKET, "Name": KEY, "Version": VERSION}},
            "FeatureTypes": ["TABLES"],
            "ClientRequestToken": ANY,
        },
    )
    started = aws.ocr.start(source("image/tiff", page_count=1))
    aws.assert_all_called()
    assert isinstance(started, RecognitionJob)
    assert started.pages == (1,)


def test_a_media_type_textract_cannot_read_is_refused_without_a_call(aws: Aws) -> None:
    with pytest.raises(RecognitionFailed, match=r"JPEG, PNG, TIFF and PDF, not image/webp"):
        aws.ocr.start(source("image/webp"))


# Jobs for PDFs and multi-page TIFFs.


def test_a_whole_pdf_is_analysed_for_tables_by_a_job_on_the_original(aws: Aws) -> None:
    expected_token = request_token(source(page_count=3), analysis=True)
    aws.textract_stub.add_response(
        "start_document_analysis",
        {"JobId": "9f1c2d3e4b5a"},
        {
            "DocumentLocation": {"S3Object": {"Bucket": BUCKET, "Name": KEY, "Version": VERSION}},
            "FeatureTypes": ["TABLES"],
            "ClientRequestToken": expected_token,
        },
    )
    started = aws.ocr.start(source(page_count=3))
    aws.assert_all_called()
    assert started == RecognitionJob(
        engine="textract", job_id="9f1c2d3e4b5a", analysis=True, pages=(1, 2, 3), staged_key=None
    )


def test_the_request_token_is_the_same_for_the_same_read_and_valid_for_textract() -> None:
    first = request_token(source(pages=(2, 4), page_count=9), analysis=True)
    again = request_token(source(pages=(2, 4), page_count=9), analysis=True)
    other_pages = request_token(source(pages=(2, 5), page_count=9), analysis=True)
    other_version = request_token(source(pages=(2, 4), page_count=9, version="v2"), analysis=True)
    text_only = request_token(source(pages=(2, 4), page_count=9), analysis=False)
    assert first == again
    assert len({first, other_pages, other_version, text_only}) == 4
    assert re.fullmatch(r"[a-zA-Z0-9\-_]{1,64}", first)


def test_a_start_delivered_twice_sends_textract_identical_requests(aws: Aws) -> None:
    sent: list[dict[str, Any]] = []
    aws.textract.meta.events.register(
        "before-parameter-build.textract.StartDocumentAnalysis", lambda params, **_: sent.append(dict(params))
    )
    for _ in range(2):
        aws.textract_stub.add_response("start_document_analysis", {"JobId": "same-job"}, None)
    first = aws.ocr.start(source(page_count=2))
    second = aws.ocr.start(source(page_count=2))
    assert first == second
    assert sent[0] == sent[1]
    assert sent[0]["ClientRequestToken"] == request_token(source(page_count=2), analysis=True)


def test_text_detection_is_used_when_tables_are_not_analysed() -> None:
    with Aws(analyze_tables=False) as aws:
        aws.textract_stub.add_response(
            "start_document_text_detection",
            {"JobId": "text-job"},
            {
                "DocumentLocation": {"S3Object": {"Bucket": BUCKET, "Name": KEY, "Version": VERSION}},
                "ClientRequestToken": ANY,
            },
        )
        blocks = Blocks().page(1)
        blocks.line(1, ("Plain", 0.1, 0.1), top=0.1)
        aws.textract_stub.add_response(
            "get_document_text_detection", job_response(blocks.blocks, pages=1, analysis=False), get_call("text-job")
        )
        started = aws.ocr.start(source(page_count=1))
        assert isinstance(started, RecognitionJob)
        assert not started.analysis
        result = aws.ocr.collect(started)
        aws.assert_all_called()
    assert result is not None
    assert result.usage.operation == "textract:DetectDocumentText"
    assert result.pages[0].lines[0].text == "Plain"


def test_a_job_still_running_collects_nothing(aws: Aws) -> None:
    aws.textract_stub.add_response(
        "get_document_analysis", {"JobStatus": "IN_PROGRESS", "Blocks": []}, get_call("job-1")
    )
    assert aws.ocr.collect(job(staged_key="ocr-staging/abc.pdf")) is None
    # The staged copy is still needed: nothing was listed or deleted.
    aws.assert_all_called()


def test_a_multi_page_job_is_collected_across_next_tokens_with_its_pages_in_order(aws: Aws) -> None:
    blocks = Blocks()
    blocks.page(1)
    blocks.line(1, ("First", 0.1, 0.1), ("page", 0.21, 0.08), top=0.1)
    blocks.page(2)  # a blank page: no lines, still a page
    blocks.page(3)
    blocks.line(3, ("Third", 0.1, 0.1), top=0.1)
    blocks.line(3, ("page", 0.1, 0.1), top=0.2)
    # The first response ends in the middle of page 3: its second line comes with the next token.
    cut = len(blocks.blocks) - 2
    aws.textract_stub.add_response(
        "get_document_analysis", job_response(blocks.blocks[:cut], pages=3, next_token="t-2"), get_call("job-1")
    )
    aws.textract_stub.add_response(
        "get_document_analysis", job_response(blocks.blocks[cut:], pages=3), get_call("job-1", "t-2")
    )

    result = aws.ocr.collect(job())

    aws.assert_all_called()
    assert result is not None
    assert [page.page for page in result.pages] == [1, 2, 3]
    assert [[line.text for line in page.lines] for page in result.pages] == [["First page"], [], ["Third", "page"]]
    assert (result.usage.provider, result.usage.operation) == ("textract", "textract:AnalyzeDocument")
    assert result.usage.priced
    assert result.usage.pages == 3


def test_a_partly_successful_job_gives_the_pages_textract_could_read(aws: Aws) -> None:
    blocks = Blocks()
    blocks.page(1)
    blocks.line(1, ("Readable", 0.1, 0.1), top=0.1)
    response = job_response(blocks.blocks, pages=2, status="PARTIAL_SUCCESS")
    response["Warnings"] = [{"ErrorCode": "UNABLE_TO_PROCESS_PAGE", "Pages": [2]}]
    aws.textract_stub.add_response("get_document_analysis", response, get_call("job-1"))

    result = aws.ocr.collect(job(pages=(1, 2)))

    assert result is not None
    assert [page.page for page in result.pages] == [1]
    assert result.pages[0].lines[0].text == "Readable"


def test_a_table_keeps_its_rows_and_header_and_its_lines_are_not_repeated(aws: Aws) -> None:
    blocks = Blocks()
    blocks.page(1)
    blocks.line(1, ("Quarterly", 0.1, 0.15), ("results", 0.26, 0.1), top=0.05)
    blocks.table(
        1,
        [["Region", "Revenue"], ["North", "1,200"], ["South", "950"]],
        left=0.1,
        top=0.2,
        header_rows=1,
        word_confidence=92.0,
    )
    blocks.line(1, ("Figures", 0.1, 0.1), ("unaudited.", 0.21, 0.12), top=0.6)
    aws.textract_stub.add_response("get_document_analysis", job_response(blocks.blocks, pages=1), get_call("job-1"))

    result = aws.ocr.collect(job(pages=(1,)))

    assert result is not None
    [page] = result.pages
    [table] = page.tables
    assert table.rows == (("Region", "Revenue"), ("North", "1,200"), ("South", "950"))
    assert table.header_rows == 1
    assert table.confidence == pytest.approx(0.92)
    assert (table.box.left, table.box.top) == pytest.approx((0.1, 0.2))
    assert table.box.bottom == pytest.approx(0.32)
    # The six cell lines are the table's text: only the lines around it remain lines.
    assert [line.text for line in page.lines] == ["Quarterly results", "Figures unaudited."]


def test_a_table_without_column_headers_has_no_header_rows(aws: Aws) -> None:
    blocks = Blocks().page(1)
    blocks.table(1, [["a", "b"], ["c", "d"]], left=0.1, top=0.1, header_rows=0)
    aws.textract_stub.add_response("get_document_analysis", job_response(blocks.blocks, pages=1), get_call("job-1"))

    result = aws.ocr.collect(job(pages=(1,)))

    assert result is not None
    assert result.pages[0].tables[0].header_rows == 0
    assert result.pages[0].tables[0].rows == (("a", "b"), ("c", "d"))


def test_a_merged_cell_repeats_its_text_in_every_position_it_covers(aws: Aws) -> None:
    blocks = Blocks().page(1)
    blocks.table(
        1,
        [["2024", "", "2025"], ["Q1", "Q2", "Q1"], ["10", "12", "14"]],
        left=0.1,
        top=0.1,
        header_rows=2,
        merged=(1, 1, 1, 2),
    )
    aws.textract_stub.add_response("get_document_analysis", job_response(blocks.blocks, pages=1), get_call("job-1"))

    result = aws.ocr.collect(job(pages=(1,)))

    assert result is not None
    [table] = result.pages[0].tables
    assert table.rows[0] == ("2024", "2024", "2025")
    assert table.rows[2] == ("10", "12", "14")
    assert table.header_rows == 2


def test_a_cell_spanning_columns_repeats_its_text_in_each(aws: Aws) -> None:
    blocks = Blocks().page(1)
    blocks.table(1, [["Total", "", "x"], ["1", "2", "3"]], left=0.1, top=0.1)
    # The older layout: one CELL with a ColumnSpan of 2 instead of a MERGED_CELL over two cells.
    cells = {
        (block["RowIndex"], block["ColumnIndex"]): block for block in blocks.blocks if block["BlockType"] == "CELL"
    }
    cells[(1, 1)]["ColumnSpan"] = 2
    covered = cells[(1, 2)]["Id"]
    blocks.blocks.remove(cells[(1, 2)])
    [table_block] = [block for block in blocks.blocks if block["BlockType"] == "TABLE"]
    table_block["Relationships"][0]["Ids"].remove(covered)
    aws.textract_stub.add_response("get_document_analysis", job_response(blocks.blocks, pages=1), get_call("job-1"))

    result = aws.ocr.collect(job(pages=(1,)))

    assert result is not None
    assert result.pages[0].tables[0].rows == (("Total", "Total", "x"), ("1", "2", "3"))


def test_a_failed_job_is_a_document_problem_with_textracts_message_and_its_copy_is_removed(aws: Aws) -> None:
    staged = "ocr-staging/abc.pdf"
    aws.textract_stub.add_response(
        "get_document_analysis",
        {"JobStatus": "FAILED", "StatusMessage": "UNSUPPORTED_DOCUMENT", "Blocks": []},
        get_call("job-1"),
    )
    aws.s3_stub.add_response(
        "list_object_versions",
        {"Versions": [{"Key": staged, "VersionId": "sv1"}], "IsTruncated": False},
        {"Bucket": BUCKET, "Prefix": staged},
    )
    aws.s3_stub.add_response("delete_object", {}, {"Bucket": BUCKET, "Key": staged, "VersionId": "sv1"})

    with pytest.raises(RecognitionFailed, match=r"UNSUPPORTED_DOCUMENT"):
        aws.ocr.collect(job(staged_key=staged))
    aws.assert_all_called()


def test_a_tiff_read_whole_keeps_only_the_pages_asked_for(aws: Aws) -> None:
    aws.textract_stub.add_response(
        "start_document_analysis",
        {"JobId": "tiff-job"},
        {
            "DocumentLocation": {"S3Object": {"Bucket": BUCKET, "Name": KEY, "Version": VERSION}},
            "FeatureTypes": ["TABLES"],
            "ClientRequestToken": ANY,
        },
    )
    blocks = Blocks()
    for number in (1, 2, 3):
        blocks.page(number)
        blocks.line(number, (f"scan {number}", 0.1, 0.1), top=0.1)
    aws.textract_stub.add_response("get_document_analysis", job_response(blocks.blocks, pages=3), get_call("tiff-job"))

    started = aws.ocr.start(source("image/tiff", pages=(1, 3), page_count=3))
    assert isinstance(started, RecognitionJob)
    assert started.staged_key is None
    result = aws.ocr.collect(started)

    aws.assert_all_called()
    assert result is not None
    assert [(page.page, page.lines[0].text) for page in result.pages] == [(1, "scan 1"), (3, "scan 3")]
    # Textract read (and billed) every page of the TIFF.
    assert result.usage.pages == 3


# A PDF of which only some pages need OCR.


def test_only_the_pages_asked_for_are_staged_read_and_numbered_as_in_the_original(aws: Aws) -> None:
    original = pdf_of_widths(100, 200, 300, 400)
    wanted = source(pages=(2, 4), page_count=4, content=original)
    token = request_token(wanted, analysis=True)
    # Under the original's key: deleting the original finds the copy (shared/domain/uploads.ocr_staging_prefix).
    staged_key = f"{ocr_staging_prefix(wanted.storage_key)}{token}.pdf"
    put: list[dict[str, Any]] = []
    aws.s3.meta.events.register("before-parameter-build.s3.PutObject", lambda params, **_: put.append(dict(params)))
    aws.s3_stub.add_response(
        "put_object",
        {"VersionId": "staged-v1"},
        {"Bucket": BUCKET, "Key": staged_key, "Body": ANY, "ContentType": "application/pdf"},
    )
    aws.textract_stub.add_response(
        "start_document_analysis",
        {"JobId": "subset-job"},
        {
            # The copy, not the original; and no version, the copy's latest is the one just put.
            "DocumentLocation": {"S3Object": {"Bucket": BUCKET, "Name": staged_key}},
            "FeatureTypes": ["TABLES"],
            "ClientRequestToken": token,
        },
    )

    started = aws.ocr.start(wanted)

    assert started == RecognitionJob(
        engine="textract", job_id="subset-job", analysis=True, pages=(2, 4), staged_key=staged_key
    )
    [request] = put
    assert page_widths(request["Body"]) == [200, 400]

    blocks = Blocks()
    blocks.page(1)
    blocks.line(1, ("second", 0.1, 0.1), top=0.1)
    blocks.page(2)
    blocks.line(2, ("fourth", 0.1, 0.1), top=0.1)
    aws.textract_stub.add_response(
        "get_document_analysis", job_response(blocks.blocks, pages=2), get_call("subset-job")
    )
    aws.s3_stub.add_response(
        "list_object_versions",
        {
            "Versions": [
                {"Key": staged_key, "VersionId": "staged-v2"},
                {"Key": staged_key, "VersionId": "staged-v1"},
                # The prefix matches a longer key too; it is not ours to delete.
                {"Key": staged_key + ".keep", "VersionId": "other"},
            ],
            "DeleteMarkers": [{"Key": staged_key, "VersionId": "marker-1"}],
            "IsTruncated": False,
        },
        {"Bucket": BUCKET, "Prefix": staged_key},
    )
    for version in ("staged-v2", "staged-v1", "marker-1"):
        aws.s3_stub.add_response("delete_object", {}, {"Bucket": BUCKET, "Key": staged_key, "VersionId": version})

    result = aws.ocr.collect(started)

    aws.assert_all_called()
    assert result is not None
    assert [(page.page, page.lines[0].text) for page in result.pages] == [(2, "second"), (4, "fourth")]
    assert result.usage.pages == 2


def test_pages_that_are_every_page_of_a_pdf_of_unknown_length_are_read_from_the_original(aws: Aws) -> None:
    aws.textract_stub.add_response(
        "start_document_analysis",
        {"JobId": "whole"},
        {
            "DocumentLocation": {"S3Object": {"Bucket": BUCKET, "Name": KEY, "Version": VERSION}},
            "FeatureTypes": ["TABLES"],
            "ClientRequestToken": ANY,
        },
    )
    started = aws.ocr.start(source(pages=(1, 2), page_count=None, content=pdf_of_widths(100, 200)))
    aws.assert_all_called()  # no put_object was stubbed, so none was made
    assert isinstance(started, RecognitionJob)
    assert started.staged_key is None
    assert started.pages == (1, 2)


def test_a_staged_copy_is_removed_when_textract_refuses_the_job(aws: Aws) -> None:
    wanted = source(pages=(1,), page_count=3, content=pdf_of_widths(100, 200, 300))
    staged_key = f"{ocr_staging_prefix(wanted.storage_key)}{request_token(wanted, analysis=True)}.pdf"
    aws.s3_stub.add_response("put_object", {}, {"Bucket": BUCKET, "Key": staged_key, "Body": ANY, "ContentType": ANY})
    aws.textract_stub.add_client_error(
        "start_document_analysis", service_error_code="BadDocumentException", http_status_code=400
    )
    aws.s3_stub.add_response(
        "list_object_versions",
        {"Versions": [{"Key": staged_key, "VersionId": "null"}], "IsTruncated": False},
        {"Bucket": BUCKET, "Prefix": staged_key},
    )
    aws.s3_stub.add_response("delete_object", {}, {"Bucket": BUCKET, "Key": staged_key, "VersionId": "null"})

    with pytest.raises(RecognitionFailed, match=r"damaged, password-protected"):
        aws.ocr.start(wanted)
    aws.assert_all_called()


def test_a_staged_copy_already_gone_is_not_an_error(aws: Aws) -> None:
    staged = "ocr-staging/gone.pdf"
    blocks = Blocks().page(1)
    aws.textract_stub.add_response("get_document_analysis", job_response(blocks.blocks, pages=1), get_call("job-1"))
    aws.s3_stub.add_response(
        "list_object_versions",
        {"Versions": [{"Key": staged, "VersionId": "v1"}], "IsTruncated": False},
        {"Bucket": BUCKET, "Prefix": staged},
    )
    aws.s3_stub.add_client_error("delete_object", service_error_code="NoSuchVersion", http_status_code=404)

    result = aws.ocr.collect(job(pages=(5,), staged_key=staged))

    aws.assert_all_called()
    assert result is not None
    assert [page.page for page in result.pages] == [5]


def test_a_pdf_that_cannot_be_opened_to_copy_pages_is_a_document_problem(aws: Aws) -> None:
    with pytest.raises(RecognitionFailed, match=r"cannot be opened"):
        aws.ocr.start(source(pages=(2,), page_count=4, content=b"%PDF-1.7 not really"))


# Retries and refusals.


def test_throttling_is_retried_with_growing_jittered_delays_then_succeeds(aws: Aws) -> None:
    aws.textract_stub.add_client_error(
        "get_document_analysis", service_error_code="ThrottlingException", http_status_code=400
    )
    aws.textract_stub.add_client_error(
        "get_document_analysis", service_error_code="ProvisionedThroughputExceededException", http_status_code=400
    )
    blocks = Blocks().page(1)
    blocks.line(1, ("Patience", 0.1, 0.1), top=0.1)
    aws.textract_stub.add_response("get_document_analysis", job_response(blocks.blocks, pages=1), get_call("job-1"))

    result = aws.ocr.collect(job(pages=(1,)))

    aws.assert_all_called()
    assert result is not None
    assert result.pages[0].lines[0].text == "Patience"
    # random() at its top gives each ceiling: 0.5 s, then twice that.
    assert aws.delays.asked == pytest.approx([0.5, 1.0])


def test_throttling_past_max_attempts_raises_the_last_error_for_the_workflow_to_retry() -> None:
    with Aws(max_attempts=3) as aws:
        for _ in range(3):
            aws.textract_stub.add_client_error(
                "start_document_analysis", service_error_code="ThrottlingException", http_status_code=400
            )
        with pytest.raises(ClientError) as raised:
            aws.ocr.start(source(page_count=2))
        aws.assert_all_called()
    assert raised.value.response["Error"]["Code"] == "ThrottlingException"
    assert aws.delays.asked == pytest.approx([0.5, 1.0])


class ClosesOnce:
    """A textract client whose first DetectDocumentText connection is closed before any answer."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.calls = 0
        self.answer = answer

    def detect_document_text(self, **_: Any) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 1:
            raise ConnectionClosedError(endpoint_url="https://textract.us-east-1.amazonaws.com")
        return self.answer


def test_a_connection_closed_mid_call_is_retried() -> None:
    blocks = Blocks().page(1)
    blocks.line(1, ("Again", 0.1, 0.1), top=0.1)
    textract = ClosesOnce(detect_response(blocks))
    s3 = s3_client()
    delays = Delays()
    with Stubber(s3) as s3_stub:
        s3_stub.add_response("head_object", head(1000), head_call())
        result = TextractOcr(textract, s3, bucket=BUCKET, sleep=delays, random=lambda: 1.0).start(source("image/jpeg"))
    assert isinstance(result, RecognitionResult)
    assert result.pages[0].lines[0].text == "Again"
    assert textract.calls == 2
    assert delays.asked == pytest.approx([0.5])


@pytest.mark.parametrize(
    ("code", "fix"),
    [
        ("UnsupportedDocumentException", r"JPEG, PNG, TIFF and PDF"),
        ("BadDocumentException", r"Re-save or re-scan"),
        ("DocumentTooLargeException", r"10 MB.*500 MB and 3,000 pages"),
        ("InvalidS3ObjectException", r"Scan the file again"),
        ("InvalidParameterException", r"invalid"),
    ],
)
def test_a_refused_document_is_a_recognition_failure_naming_the_fix_and_never_retried(
    aws: Aws, code: str, fix: str
) -> None:
    aws.s3_stub.add_response("head_object", head(1000), head_call())
    aws.textract_stub.add_client_error(
        "detect_document_text", service_error_code=code, service_message="refused", http_status_code=400
    )
    with pytest.raises(RecognitionFailed, match=fix) as raised:
        aws.ocr.start(source("image/png"))
    aws.assert_all_called()
    assert KEY not in raised.value.detail  # a storage key never reaches the file's owner
    assert not re.search(r"\b(s3|textract|kms):", raised.value.detail)  # nor an IAM action
    assert aws.delays.asked == []


def test_a_missing_textract_permission_makes_ocr_unavailable_and_only_the_log_names_the_action(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    aws.textract_stub.add_client_error(
        "start_document_analysis", service_error_code="AccessDeniedException", http_status_code=400
    )
    with (
        caplog.at_level("ERROR", logger="shared.adapters.aws.textract_ocr"),
        pytest.raises(CapabilityUnavailable) as raised,
    ):
        aws.ocr.start(source(page_count=2))
    assert raised.value.capability == "ocr"
    # The reason becomes the version's ocr.detail, which the file's owner reads: the fix is the operator's.
    assert raised.value.reason == (
        "OCR is not permitted for this deployment yet: an operator must grant the OCR function the access it needs"
        " (the refused action is in its log)."
    )
    assert "grant textract:StartDocumentAnalysis to the function's role" in caplog.text
    assert aws.delays.asked == []


def test_a_missing_permission_to_stage_pages_is_logged_naming_the_s3_action(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    aws.s3_stub.add_client_error("put_object", service_error_code="AccessDenied", http_status_code=403)
    with (
        caplog.at_level("ERROR", logger="shared.adapters.aws.textract_ocr"),
        pytest.raises(CapabilityUnavailable) as raised,
    ):
        aws.ocr.start(source(pages=(1,), page_count=2, content=pdf_of_widths(100, 200)))
    assert raised.value.reason == OCR_NOT_PERMITTED
    assert "AWS refused s3:PutObject (AccessDenied)" in caplog.text


def test_an_original_gone_from_storage_is_a_document_problem(aws: Aws) -> None:
    aws.s3_stub.add_client_error("head_object", service_error_code="404", http_status_code=404)
    with pytest.raises(RecognitionFailed, match=r"gone"):
        aws.ocr.start(source("image/png"))


# Construction.


def test_the_capability_is_ready_and_the_adapter_keeps_the_port() -> None:
    provider: OcrProvider = TextractOcr(textract_client(), s3_client(), bucket=BUCKET)
    status = provider.capability()
    assert status.available
    assert status.provider == "textract"


def test_from_region_builds_its_clients_on_first_use_with_sdk_retries_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    built: dict[str, Any] = {}
    real_client = boto3.client
    blocks = Blocks().page(1)
    blocks.line(1, ("Built", 0.1, 0.1), top=0.1)

    def stubbed_client(*args: Any, **kwargs: Any) -> Any:
        service = args[0]
        client = real_client(*args, **kwargs)
        stub = Stubber(client)
        if service == "s3":
            stub.add_response("head_object", head(1000), head_call())
        else:
            stub.add_response("detect_document_text", detect_response(blocks), None)
        stub.activate()
        built[service] = client
        return client

    monkeypatch.setattr(boto3, "client", stubbed_client)
    ocr = TextractOcr.from_region("eu-west-1", bucket=BUCKET)
    assert ocr.capability().available
    assert built == {}  # nothing read yet, no client built
    result = ocr.start(source("image/png"))
    assert isinstance(result, RecognitionResult)
    assert result.pages[0].lines[0].text == "Built"
    assert set(built) == {"s3", "textract"}
    for client in built.values():
        assert client.meta.region_name == "eu-west-1"
        assert client.meta.config.retries["total_max_attempts"] == 1


def test_a_next_token_that_repeats_is_not_followed_for_ever(aws: Aws) -> None:
    blocks = Blocks()
    blocks.page(1)
    aws.textract_stub.add_response(
        "get_document_analysis", job_response(blocks.blocks, pages=1, next_token="t-1"), get_call("job-1")
    )
    aws.textract_stub.add_response(
        "get_document_analysis", job_response([], pages=1, next_token="t-1"), get_call("job-1", "t-1")
    )
    with pytest.raises(RecognitionFailed, match="NextToken twice"):
        aws.ocr.collect(job(pages=(1,)))
    aws.assert_all_called()


def test_a_job_nobody_will_collect_has_its_staged_copy_removed(aws: Aws) -> None:
    staged = "ocr-staging/abandoned.pdf"
    aws.s3_stub.add_response(
        "list_object_versions",
        {"Versions": [{"Key": staged, "VersionId": "sv9"}], "IsTruncated": False},
        {"Bucket": BUCKET, "Prefix": staged},
    )
    aws.s3_stub.add_response("delete_object", {}, {"Bucket": BUCKET, "Key": staged, "VersionId": "sv9"})
    aws.ocr.discard(job(staged_key=staged))
    aws.assert_all_called()
    # A job on the original holds nothing: discarding it calls nothing.
    aws.ocr.discard(job())
    aws.assert_all_called()


def test_discarding_never_raises_even_when_storage_refuses(aws: Aws) -> None:
    aws.s3_stub.add_client_error("list_object_versions", "AccessDenied", http_status_code=403)
    aws.ocr.discard(job(staged_key="ocr-staging/x.pdf"))  # logged; the lifecycle rule removes it within a day


def test_a_staged_copy_goes_under_its_tenants_own_folder_where_that_tenants_session_may_write(aws: Aws) -> None:
    """The recognize step's tenant session may write `ocr-staging/tenants/{its tenant}/` only (infra/constructs/
    tenant_data.py): a copy staged anywhere else would be refused."""
    original = pdf_of_widths(100, 200, 300)
    key = storage_key("acme", uuid4(), uuid4())
    wanted = OcrSource(
        media_type="application/pdf",
        pages=(2,),
        page_count=3,
        storage_key=key,
        storage_version_id=VERSION,
        read=lambda: original,
    )
    token = request_token(wanted, analysis=True)
    staged_key = f"{ocr_staging_prefix(key)}{token}.pdf"
    assert staged_key.startswith("ocr-staging/tenants/acme/")
    aws.s3_stub.add_response(
        "put_object",
        {"VersionId": "staged-v1"},
        {"Bucket": BUCKET, "Key": staged_key, "Body": ANY, "ContentType": "application/pdf"},
    )
    aws.textract_stub.add_response(
        "start_document_analysis",
        {"JobId": "tenant-job"},
        {
            "DocumentLocation": {"S3Object": {"Bucket": BUCKET, "Name": staged_key}},
            "FeatureTypes": ["TABLES"],
            "ClientRequestToken": token,
        },
    )

    started = aws.ocr.start(wanted)

    aws.assert_all_called()
    assert isinstance(started, RecognitionJob) and started.staged_key == staged_key


def test_the_pages_are_copied_inside_the_bounded_sandbox_not_in_the_recognize_step(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a copy allowed no memory: in the sandbox's child PDFium cannot run, and the start is a recognition
    # failure naming the fix; copied in this process (as before), the pages would be staged and a job started.
    monkeypatch.setattr(textract_ocr, "PAGE_COPY_MEMORY_BYTES", 1, raising=False)
    wanted = source(pages=(2, 4), page_count=4, content=pdf_of_widths(100, 200, 300, 400))
    with pytest.raises(RecognitionFailed, match="re-save it and upload it again"):
        aws.ocr.start(wanted)


def test_pages_past_the_end_of_the_pdf_are_a_caller_error_named_from_the_sandbox(aws: Aws) -> None:
    wanted = source(pages=(2, 9), page_count=4, content=pdf_of_widths(100, 200, 300, 400))
    with pytest.raises(ValueError, match=re.escape("pages [9] were asked for, but the PDF has 4 pages")):
        aws.ocr.start(wanted)
