"""The services' work that runs in the sandbox's child (shared/sandbox/), one module-level function each:
bytes in (a `pack`ed header and parts), bytes out, every exception turned into an answer.

Imported by name in a fresh interpreter for each child, so it imports only the domain and what the work
needs (no logging stack, no SDK): its imports are the child's start-up cost. The parser, renderer or PDF
operations the parent uses are named by class (`dotted_name`) and built again here with no arguments: the
child receives no object of the parent's.
"""

import io
import json
from typing import Any

from pydantic import TypeAdapter

from shared.domain.document import ExtractionFailure, ExtractionLimits, ExtractionOutcome
from shared.domain.exports import ExportFormat, RenderedFile, RenderFailed, RenderLimits, RenderRequest
from shared.domain.files import FailureReason
from shared.domain.page_images import DrawnPage, PageOutcome, PageOutOfRange, PageUnreadable
from shared.domain.pdf_tools import PagePick, PdfInput, PdfInputProblem
from shared.domain.ranged_reads import RangedReader
from shared.domain.sniffing import archive_mismatch
from shared.domain.uploads import accepted_type
from shared.sandbox import pack, parent_range, resolve, unpack

OUTCOMES: TypeAdapter[list[ExtractionOutcome]] = TypeAdapter(list[ExtractionOutcome])


def parse_document(payload: bytes) -> bytes:
    """{parser, limits} and the document → its ExtractionOutcome as JSON, whatever the parser raised."""
    header, (content,) = unpack(payload)
    parser, limits = resolve(header["parser"])(), ExtractionLimits.model_validate(header["limits"])
    try:
        outcome: ExtractionOutcome = parser.parse(content, limits)
    except MemoryError:
        outcome = ExtractionFailure(
            reason=FailureReason.TOO_LARGE, detail="the document needs more memory than allowed"
        )
    except RecursionError:
        outcome = ExtractionFailure(reason=FailureReason.MALFORMED, detail="the document's structure nests too deeply")
    except BaseException as error:
        outcome = ExtractionFailure(
            reason=FailureReason.MALFORMED, detail=f"the parser could not read it ({type(error).__name__})"
        )
    return outcome.model_dump_json().encode()


def parse_texts(payload: bytes) -> bytes:
    """{parser, limits} and texts → each text's outcome (a JSON list); a parser that raises is a failure value."""
    header, contents = unpack(payload)
    parser, limits = resolve(header["parser"])(), ExtractionLimits.model_validate(header["limits"])
    outcomes: list[ExtractionOutcome] = []
    for content in contents:
        try:
            outcomes.append(parser.parse(content, limits))
        except Exception as error:
            outcomes.append(ExtractionFailure(reason=FailureReason.MALFORMED, detail=type(error).__name__))
    return OUTCOMES.dump_json(outcomes)


def render_document(payload: bytes) -> bytes:
    """{renderer, request, limits} → a rendering answer (`_answer`)."""
    header, _ = unpack(payload)
    renderer = resolve(header["renderer"])()
    request = RenderRequest.model_validate_json(header["request"])
    limits = RenderLimits.model_validate(header["limits"])
    return _answer(lambda: renderer.render(request, limits))


PAGE_OUT_OF_MEMORY = "drawing this page needs more memory than allowed"


def render_page(payload: bytes) -> bytes:
    """{rasterizer, media_type, page} and the original → a page answer (`page_answer`), whatever it raised."""
    header, (content,) = unpack(payload)
    rasterizer = resolve(header["rasterizer"])()
    outcome: PageOutcome
    try:
        outcome = rasterizer.rasterize(content, str(header["media_type"]), int(header["page"]))
    except MemoryError:
        outcome = PageUnreadable(PAGE_OUT_OF_MEMORY)
    except RecursionError:
        outcome = PageUnreadable("the page's structure nests too deeply to be drawn")
    except BaseException as error:
        outcome = PageUnreadable(f"the page could not be drawn ({type(error).__name__})")
    return page_answer(outcome)


def page_answer(outcome: PageOutcome) -> bytes:
    """A page's answer: a `pack`ed header ({"drawn": …} with the PNG, {"out_of_range": …} or {"failed": …})."""
    if isinstance(outcome, DrawnPage):
        drawn = {"page": outcome.page, "page_count": outcome.page_count, "width": outcome.width}
        return pack({"drawn": {**drawn, "height": outcome.height}}, outcome.png)
    if isinstance(outcome, PageOutOfRange):
        return pack({"out_of_range": {"page": outcome.page, "page_count": outcome.page_count}})
    return pack({"failed": outcome.sentence})


def pdf_operation(payload: bytes) -> bytes:
    """{operations, op, text, opacity, names, picks, limits} and the input PDFs → a rendering answer."""
    header, contents = unpack(payload)
    operations = resolve(header["operations"])()
    limits = RenderLimits.model_validate(header["limits"])
    inputs = [PdfInput(name=name, content=content) for name, content in zip(header["names"], contents, strict=True)]
    picks = [
        PagePick(source=pick["source"], pages=None if pick["pages"] is None else tuple(map(tuple, pick["pages"])))
        for pick in header["picks"]
    ]

    def work() -> RenderedFile:
        try:
            if header["op"] == "watermark":
                content, pages = operations.watermark(
                    inputs[0], header["text"], opacity=header["opacity"], max_pages=limits.max_pages
                )
            else:
                content, pages = operations.compose(
                    inputs, picks, outline=header["op"] == "merge", max_pages=limits.max_pages
                )
        except PdfInputProblem as problem:
            raise RenderFailed(problem.sentence) from problem
        if len(content) > limits.max_bytes:
            raise RenderFailed(f"the result would be {len(content)} bytes; the limit is {limits.max_bytes}")
        return RenderedFile(content=content, format=ExportFormat.PDF, page_count=pages)

    return _answer(work)


def sniff_office_archive(payload: bytes) -> bytes:
    """{size, media_type, filename} and the first bytes → {"mismatch": sentence or null}. The rest of the
    object (the zip directory, one member, or an OLE file's sectors) is read from the parent by range."""
    header, (prefix,) = unpack(payload)
    size = int(header["size"])
    stream = io.BufferedReader(_ParentObject(size), buffer_size=256 * 1024)
    accepted = accepted_type(header["media_type"], header["filename"])
    return json.dumps({"mismatch": archive_mismatch(stream, size, prefix, accepted)}).encode()


def probe_recording(payload: bytes) -> bytes:
    """{probe, size, limits} → the recording's MediaInfo or MediaRefusal as JSON, by the probe named (built again
    here by name, as a parser is). Its headers (and, for some containers, its tail) are read from the parent by
    range, at most `limits.max_header_bytes`: never the whole recording."""
    from shared.domain.media import MediaLimits

    header, _ = unpack(payload)
    probe = resolve(header["probe"])
    stream = io.BufferedReader(_ParentObject(int(header["size"])), buffer_size=64 * 1024)
    found = probe(stream, MediaLimits.model_validate(header["limits"]))
    return str(found.model_dump_json()).encode()


class _ParentObject(RangedReader):
    """A seekable view of the object the parent serves by range (the child has no network to fetch it)."""

    def _fetch(self, start: int, length: int) -> bytes:
        return parent_range(start, length)


# A rendering's answer: a JSON header line, then the rendered bytes (the parent validates both).
def _answer(work: Any) -> bytes:
    try:
        rendered: RenderedFile = work()
    except RenderFailed as failure:
        return failure_answer(failure.sentence)
    header = rendered.model_dump(mode="json", exclude={"content"})
    return json.dumps({"ok": header}).encode() + b"\n" + rendered.content


def failure_answer(sentence: str) -> bytes:
    return json.dumps({"failed": sentence}).encode() + b"\n"
