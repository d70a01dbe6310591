"""What the structured fuzz tests assert of every outcome, how they run a parser, and what they share.

For every input, a parser returns an ExtractedDocument or an ExtractionFailure from the closed set (never
raises, never hangs past its bound), and the document keeps the limits: at most max_blocks blocks, text
within max_text_bytes, no table row wider than max_columns, every block located (and where it says it
is, sane: a page the document has, a box inside the page, a line span that runs forward).

The Office and text examples run their parser in this process: a sandboxed call starts a fresh
interpreter (some 180 ms, against a few milliseconds for most of these parses), so only a sample of them
runs through the Extractor as the pipeline does. In this process a hang is cut by a CPU-time alarm
(SIGPROF: pytest-timeout keeps SIGALRM) and memory by the sandbox's own budget. Every PDF example runs
through the Extractor: PDFium is native code, whose hangs no alarm interrupts and whose allocations can
abort the process (a 40 KB page can make it want gigabytes), and the fork costs a PDF parse only about
three times over (16 against 44 ms per example, measured here).

QUIRE_FUZZ_EXAMPLES sets how many examples each test runs. QUIRE_FUZZ_FINDINGS=DIR is for a long
campaign: each finding is written to DIR (the input, and what was wrong with it) instead of failing the
test, so one run collects every kind of finding instead of stopping at the first.
"""

import hashlib
import json
import logging
import math
import os
import re
import resource
import signal
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TypeVar

from hypothesis import strategies as st

from shared.bootstrap import document_parsers
from shared.domain.document import (
    Block,
    BlockKind,
    ExtractedDocument,
    ExtractionFailure,
    ExtractionLimits,
    ExtractionOutcome,
)
from shared.domain.files import FailureReason
from shared.domain.rendering import render_markdown
from shared.ports import DocumentParser
from shared.services.extraction import Extractor
from tests.conftest import REPO_ROOT

EXAMPLES = int(os.environ.get("QUIRE_FUZZ_EXAMPLES", "25"))
# Through the sandbox: a twentieth of the examples, and never none.
SANDBOXED_EXAMPLES = max(3, EXAMPLES // 20)
FINDINGS = os.environ.get("QUIRE_FUZZ_FINDINGS")
# `make test` runs the same examples every time (a failure there is reproducible, never intermittent);
# `make fuzz` and a campaign draw new ones.
DERANDOMIZE = "QUIRE_FUZZ_EXAMPLES" not in os.environ and not FINDINGS
# CPU seconds after which a parse in this process is a hang (no input here needs a tenth of it); a
# campaign cuts sooner, so that a hang it keeps meeting costs it less.
HANG_CPU_SECONDS = 20.0 if FINDINGS else 60.0
# The sandbox's wall clock: far above any parse here, below the pipeline's 120 s.
SANDBOX_SECONDS = 60.0
# What a parse may add to its process's memory: the pipeline's sandbox allows the same.
MEMORY_BYTES = 2 * 1024 * 1024 * 1024
# A campaign also keeps, without failing, the inputs that took this long in this process.
SLOW_SECONDS = 5.0
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
OFFICE_DATA = SHARED_DATA / "office"
PDF_DATA = SHARED_DATA / "pdfs"
# Public seeds above this size cost more to rewrite per example than they add.
MAX_PUBLIC_SEED_BYTES = 256 * 1024
# A mutated file stops growing here (far below the upload limit the Extractor refuses larger files at).
MAX_MUTATED_BYTES = 8 * 1024 * 1024

T = TypeVar("T")


def pick(items: Sequence[T], index: int) -> T:
    return items[index % len(items)]


@dataclass(frozen=True)
class Edit:
    """One mutation: which operation, and three numbers that pick what it applies to (each modulo)."""

    operation: str
    part: int = 0
    target: int = 0
    value: int = 0


def edits(operations: frozenset[str], max_size: int = 6) -> st.SearchStrategy[list[Edit]]:
    number = st.integers(min_value=0, max_value=1 << 16)
    edit = st.builds(Edit, st.sampled_from(sorted(operations)), number, number, number)
    return st.lists(edit, min_size=1, max_size=max_size)


def public_files(folder: Path, suffix: str) -> tuple[bytes, ...]:
    """The public sample files of a type, small enough to rewrite per example (none when absent)."""
    if not folder.is_dir():
        return ()
    paths = sorted(path for path in folder.rglob(f"*.{suffix}") if path.stat().st_size <= MAX_PUBLIC_SEED_BYTES)
    return tuple(path.read_bytes() for path in paths)


# Tight limits as often as the defaults: the edges of a limit are where a parser oversteps it.
LIMITS = st.builds(
    ExtractionLimits,
    max_pages=st.sampled_from([1, 3, 2_000]),
    max_text_bytes=st.sampled_from([64, 4_096, 10 * 1024 * 1024, 10 * 1024 * 1024]),
    max_blocks=st.sampled_from([1, 7, 100_000, 100_000]),
    max_columns=st.sampled_from([1, 4, 256, 256]),
    max_inflated_bytes=st.sampled_from([1024 * 1024, 512 * 1024 * 1024]),
    timeout_seconds=st.just(SANDBOX_SECONDS),
)
# What a damaged file of each family may be refused as; any other reason is the wrong sentence.
DAMAGED = frozenset({FailureReason.MALFORMED, FailureReason.TOO_LARGE})
PAGED_AND_DAMAGED = DAMAGED | {FailureReason.TOO_MANY_PAGES}
# The text parsers read any bytes as text: no failure is right for them.
NEVER_REFUSED: frozenset[FailureReason] = frozenset()
_SANDBOX_CAUGHT = ("the parser could not read it", "the parser crashed", "the document's structure nests too deeply")


class NoOutcome(BaseException):
    """The parse ran past HANG_CPU_SECONDS (a BaseException: a parser's `except Exception` keeps it)."""


def _expire(signum: int, frame: FrameType | None) -> None:
    raise NoOutcome


def parsed_in_process(parser: DocumentParser, content: bytes, limits: ExtractionLimits) -> object:
    """The parser's outcome, or the exception it raised (which is a finding, not a test error). The parse
    may add as much memory as the pipeline's sandbox lets it, and no more: past it is a MemoryError here,
    not the whole machine's memory."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    ceiling = _address_space_bytes() + MEMORY_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (ceiling if hard == resource.RLIM_INFINITY else min(ceiling, hard), hard))
    previous = signal.signal(signal.SIGPROF, _expire)
    signal.setitimer(signal.ITIMER_PROF, HANG_CPU_SECONDS)
    bugs = _OwnCodeRaised()
    logging.getLogger("shared.adapters.parsers.ooxml_guard").addHandler(bugs)
    try:
        outcome = parser.parse(content, limits)
        # The Office readers answer malformed whatever raised; what our own code raised is a finding.
        return bugs.raised[0] if bugs.raised else outcome
    except (Exception, NoOutcome) as error:
        return error
    finally:
        logging.getLogger("shared.adapters.parsers.ooxml_guard").removeHandler(bugs)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class _OwnCodeRaised(logging.Handler):
    """The exceptions read_office reports as raised by our own code."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.raised: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.raised.append(record.exc_info[1])


def _address_space_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def sandboxed(content: bytes, media_type: str, limits: ExtractionLimits) -> ExtractionOutcome:
    """The outcome the pipeline would record: the Extractor's, with the pipeline's parsers and memory."""
    return Extractor(document_parsers(), limits, memory_limit_bytes=MEMORY_BYTES).extract(content, media_type)


def violations(outcome: object, limits: ExtractionLimits, reasons: frozenset[FailureReason]) -> list[str]:
    """What is wrong with an outcome (nothing, for a document within the limits or a right failure)."""
    if isinstance(outcome, NoOutcome):
        return [f"no outcome after {HANG_CPU_SECONDS:g} CPU seconds"]
    if isinstance(outcome, BaseException):
        return [f"raised {type(outcome).__name__}: {str(outcome)[:300]}"]
    if isinstance(outcome, ExtractionFailure):
        return _failure(outcome, reasons)
    if not isinstance(outcome, ExtractedDocument):
        return [f"not an outcome: {type(outcome).__name__}"]
    problems: list[str] = []
    if len(outcome.blocks) > limits.max_blocks:
        problems.append(f"{len(outcome.blocks)} blocks; the limit is {limits.max_blocks}")
    text_bytes = sum(_text_bytes(block) for block in outcome.blocks)
    if text_bytes > limits.max_text_bytes:
        problems.append(f"{text_bytes} bytes of text; the limit is {limits.max_text_bytes}")
    pages = outcome.page_count
    if pages is not None and any(not 1 <= page <= pages for page in outcome.pages_without_text):
        problems.append(f"pages without text {outcome.pages_without_text[:5]} outside 1..{pages}")
    for index, block in enumerate(outcome.blocks):
        problems.extend(f"block {index} ({block.kind.value}): {problem}" for problem in _block(block, pages, limits))
    if ExtractedDocument.model_validate_json(outcome.model_dump_json()) != outcome:
        problems.append("the document is not the same after a JSON round trip (the sandbox's answer)")
    try:
        render_markdown(outcome.blocks)
    except Exception as error:
        problems.append(f"render_markdown raised {type(error).__name__}: {error}")
    return problems[:8]


def _failure(failure: ExtractionFailure, reasons: frozenset[FailureReason]) -> list[str]:
    if failure.detail.startswith(_SANDBOX_CAUGHT):
        return [f"the sandbox caught what the parser did not: {failure.detail}"]
    if failure.reason not in reasons:
        return [f"refused as {failure.reason.value} ({failure.detail})"]
    return [] if failure.detail and failure.user_sentence else ["a failure without a detail or a sentence"]


def _text_bytes(block: Block) -> int:
    cells = sum(len(cell.encode()) for row in block.table.rows for cell in row) if block.table else 0
    return len(block.text.encode()) + cells


def _block(block: Block, pages: int | None, limits: ExtractionLimits) -> list[str]:
    problems = []
    location = block.location
    if not location.model_dump(exclude_none=True):
        problems.append("not located")
    if location.page is not None and not (location.page >= 1 and (pages is None or location.page <= pages)):
        problems.append(f"on page {location.page} of {pages}")
    box = location.box
    if box is not None and not all(math.isfinite(v) for v in (box.left, box.top, box.width, box.height)):
        problems.append(f"a box that is not finite: {box}")
    elif box is not None and (box.right > 1.0001 or box.bottom > 1.0001):
        problems.append(f"a box past the page: {box}")
    start, end = location.line_start, location.line_end
    if (start is not None and start < 1) or (start is not None and end is not None and end < start):
        problems.append(f"lines {start}..{end}")
    if (block.kind is BlockKind.TABLE) != (block.table is not None):
        problems.append("a table block without a table, or a table in another kind of block")
    if block.table is not None:
        widest = max((len(row) for row in block.table.rows), default=0)
        if widest > limits.max_columns:
            problems.append(f"a row {widest} cells wide; the column limit is {limits.max_columns}")
        if not 0 <= block.table.header_rows <= len(block.table.rows):
            problems.append(f"{block.table.header_rows} header rows of {len(block.table.rows)}")
    if block.kind is BlockKind.HEADING and not (block.level is not None and 1 <= block.level <= 6):
        problems.append(f"heading level {block.level}")
    cells = [cell for row in block.table.rows for cell in row] if block.table else []
    if any("\x00" in text for text in [block.text, *cells]):
        problems.append("NUL in the text")
    return problems


def judge(
    label: str,
    content: bytes,
    outcome: object,
    limits: ExtractionLimits,
    reasons: frozenset[FailureReason],
    *,
    seconds: float = 0.0,
) -> None:
    """Fail (or, in a campaign, record) an outcome that breaks the property."""
    problems = violations(outcome, limits, reasons)
    if FINDINGS:
        if problems or seconds > SLOW_SECONDS:
            _record(label, content, outcome, limits, problems or [f"took {seconds:.1f} s"])
        return
    if problems:
        cause = outcome if isinstance(outcome, BaseException) else None
        raise AssertionError(f"{label}: " + "; ".join(problems)) from cause


def _signature(label: str, outcome: object, problems: list[str]) -> str:
    """Findings of one kind share a signature: the format, and where it raised or what it broke."""
    if isinstance(outcome, BaseException) and not isinstance(outcome, NoOutcome):
        frames = traceback.extract_tb(outcome.__traceback__)
        ours = [frame for frame in frames if "/shared/" in frame.filename] or frames[-1:]
        where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
        return f"{label}-{type(outcome).__name__}-{where}"
    return f"{label}-" + re.sub(r"[^a-z]+", "-", re.sub(r"\d+", "N", problems[0].lower()))[:60]


def _record(label: str, content: bytes, outcome: object, limits: ExtractionLimits, problems: list[str]) -> None:
    """The input and what was wrong with it, at most three of each signature."""
    assert FINDINGS is not None
    folder = Path(FINDINGS) / _signature(label, outcome, problems).strip("-")
    folder.mkdir(parents=True, exist_ok=True)
    if len(list(folder.glob("*.json"))) >= 3:
        return
    name = hashlib.sha256(content).hexdigest()[:16]
    (folder / f"{name}.input").write_bytes(content)
    detail = {
        "label": label,
        "problems": problems,
        "limits": limits.model_dump(),
        "traceback": "".join(traceback.format_exception(outcome)) if isinstance(outcome, BaseException) else None,
        "outcome": outcome.model_dump(mode="json") if isinstance(outcome, ExtractionFailure) else None,
        "recorded": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    (folder / f"{name}.json").write_text(json.dumps(detail, indent=2))
