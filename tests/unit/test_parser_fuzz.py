"""A short fuzz run of every binary parser on byte-level damage to a valid document: each outcome is a
value, and a document keeps the limits (tests/unit/fuzzing.py's property).

Flipped bytes and cut files mostly break the container (a zip's checksums, a PDF's cross-reference), so
they test how a parser refuses a damaged file; test_structured_fuzz.py's mutations keep the container
valid and reach what is inside. `make test` runs a few dozen examples per parser; `make fuzz`
(QUIRE_FUZZ_EXAMPLES) many more.
"""

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.adapters.parsers.docx import DocxParser
from shared.adapters.parsers.image import ImageParser
from shared.adapters.parsers.pdf import PdfParser
from shared.adapters.parsers.pptx import PptxParser
from shared.adapters.parsers.xlsx import XlsxParser
from shared.domain.document import ExtractionLimits
from shared.domain.files import FailureReason
from shared.ports import DocumentParser
from tests.builders.images import picture
from tests.builders.office import slides, word_document, workbook
from tests.builders.pdf import report_pdf
from tests.unit.fuzzing import DAMAGED, DERANDOMIZE, EXAMPLES, PAGED_AND_DAMAGED, judge, parsed_in_process

SEEDS: dict[str, tuple[DocumentParser, bytes, frozenset[FailureReason]]] = {
    "pdf": (PdfParser(), report_pdf(blank_second_page=False), PAGED_AND_DAMAGED),
    "docx": (DocxParser(), word_document(), DAMAGED),
    "xlsx": (XlsxParser(), workbook(), DAMAGED),
    "pptx": (PptxParser(), slides(), PAGED_AND_DAMAGED),
    "png": (ImageParser(), picture("PNG"), PAGED_AND_DAMAGED),
    "tiff": (ImageParser(), picture("TIFF", frames=3), PAGED_AND_DAMAGED),
}


def mutate(seed: bytes, edits: list[tuple[int, int]], cut: int) -> bytes:
    data = bytearray(seed[: max(cut, 1)])
    for position, value in edits:
        data[position % len(data)] = value
    return bytes(data)


@pytest.mark.timeout(max(300, EXAMPLES))
@pytest.mark.parametrize("name", sorted(SEEDS))
@settings(max_examples=EXAMPLES, derandomize=DERANDOMIZE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)), max_size=8),
    cut=st.integers(min_value=1, max_value=1 << 20),
)
def test_a_damaged_document_is_a_failure_value_or_blocks_never_an_exception(
    name: str, edits: list[tuple[int, int]], cut: int
) -> None:
    parser, seed, reasons = SEEDS[name]
    content = mutate(seed, edits, cut)
    limits = ExtractionLimits(max_blocks=500)
    began = time.monotonic()
    outcome = parsed_in_process(parser, content, limits)
    judge(f"bytes-{name}", content, outcome, limits, reasons, seconds=time.monotonic() - began)
