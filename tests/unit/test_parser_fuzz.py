"""A short fuzz run of every binary parser on mutations of a valid document: each outcome is a value.

`make test` runs a few dozen examples per parser; `make fuzz` (QUIRE_FUZZ_EXAMPLES) runs many more.
"""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.adapters.parsers.docx import DocxParser
from shared.adapters.parsers.image import ImageParser
from shared.adapters.parsers.pdf import PdfParser
from shared.adapters.parsers.pptx import PptxParser
from shared.adapters.parsers.xlsx import XlsxParser
from shared.domain.document import ExtractedDocument, ExtractionFailure, ExtractionLimits
from shared.domain.rendering import render_markdown
from tests.unit.test_image_parser import picture
from tests.unit.test_office_parsers import slides, word_document, workbook
from tests.unit.test_pdf_parser import report_pdf

EXAMPLES = int(os.environ.get("QUIRE_FUZZ_EXAMPLES", "25"))
SEEDS = {
    "pdf": (PdfParser(), report_pdf(blank_second_page=False)),
    "docx": (DocxParser(), word_document()),
    "xlsx": (XlsxParser(), workbook()),
    "pptx": (PptxParser(), slides()),
    "png": (ImageParser(), picture("PNG")),
    "tiff": (ImageParser(), picture("TIFF", frames=3)),
}


def mutate(seed: bytes, edits: list[tuple[int, int]], cut: int) -> bytes:
    data = bytearray(seed[: max(cut, 1)])
    for position, value in edits:
        data[position % len(data)] = value
    return bytes(data)


@pytest.mark.parametrize("name", sorted(SEEDS))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=8),
    cut=st.integers(min_value=1, max_value=1 << 20),
)
def test_a_damaged_document_is_a_failure_value_or_blocks_never_an_exception(
    name: str, edits: list[tuple[int, int]], cut: int
) -> None:
    parser, seed = SEEDS[name]
    outcome = parser.parse(mutate(seed, edits, cut), ExtractionLimits(max_blocks=500))
    assert isinstance(outcome, ExtractedDocument | ExtractionFailure)
    if isinstance(outcome, ExtractedDocument):
        render_markdown(outcome.blocks)
