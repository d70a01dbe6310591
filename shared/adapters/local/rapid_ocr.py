"""The local OcrProvider: RapidOCR (PP-OCR detection, orientation and recognition models, shipped inside
the `rapidocr` wheel and run by onnxruntime on the CPU) over pages rendered by PDFium.

Only the pages asked for are rendered. Each page is turned upright before it is read: PP-OCR's own
classifier decides 0 or 180 for one line at a time, which misreads a page scanned sideways or upside
down, so the page's orientation is decided once, from its detected text boxes (mostly tall → a quarter
turn) and a width-weighted vote of the classifier over its widest lines (→ a half turn). Boxes are then
mapped back onto the page as it is displayed, normalised, with each line's confidence.

Everything runs in a child process (shared/sandbox/): a scan is attacker-controlled input to image
decoders written in C, so it runs in a fresh confined interpreter (no environment, no socket, no new
process) with a wall clock and a memory limit. The models load in that child (about half a second), one
child per document, and never in the serving process.
"""

import io
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shared.domain.capabilities import CapabilityStatus
from shared.domain.errors import RecognitionFailed
from shared.domain.recognition import (
    MAX_OCR_PAGES,
    MIN_LINE_CONFIDENCE,
    BoundingBox,
    RecognitionJob,
    RecognitionResult,
    RecognizedLine,
    RecognizedPage,
    RecognizedSegment,
)
from shared.domain.usage import Usage
from shared.ports import OcrProvider, OcrSource
from shared.sandbox import (
    AnswerTooLarge,
    Crashed,
    KilledFromOutside,
    OutOfMemory,
    TimedOut,
    Unreadable,
    pack,
    sandboxed,
    unpack,
)

ENGINE = "rapidocr"
PDF_TYPE = "application/pdf"
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/tiff"})
# 200 dpi reads 8-point text reliably and keeps an A4 page near 4 megapixels.
RENDER_DPI = 200
# Bounds on attacker-controlled pages: a PDF page's MediaBox can claim to be kilometres wide.
MAX_PAGE_PIXELS = 16_000_000
# An image whose header claims more is refused before it is decoded (a decompression bomb).
MAX_IMAGE_PIXELS = 60_000_000
# A gap between words wider than this many line heights separates columns (a word space is ~0.3).
COLUMN_GAP_LINE_HEIGHTS = 1.0
DETECTION_SIDE_PIXELS = 1600
# What OCR of at most MAX_OCR_PAGES pages can honestly answer (lines, boxes, words as JSON).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
# How many of a page's widest lines vote on its orientation.
ORIENTATION_SAMPLE = 12


@dataclass(frozen=True)
class OcrLimits:
    max_pages: int = MAX_OCR_PAGES
    seconds_per_page: float = 20.0
    min_timeout_seconds: float = 60.0
    memory_limit_bytes: int = 3 * 1024 * 1024 * 1024


_PAGE_OUT_OF_MEMORY = "the page needs more memory than OCR allows"


class RapidOcr(OcrProvider):
    def __init__(self, limits: OcrLimits | None = None) -> None:
        self._limits = limits or OcrLimits()

    def capability(self) -> CapabilityStatus:
        import importlib.util

        missing = [name for name in ("rapidocr", "onnxruntime") if importlib.util.find_spec(name) is None]
        if missing:
            return CapabilityStatus.unavailable(
                ENGINE, f"{' and '.join(missing)} not installed: install the project's `local` extra"
            )
        return CapabilityStatus.ready(ENGINE)

    def start(self, source: OcrSource) -> RecognitionResult:
        """Read the pages now (RapidOCR never leaves a job running)."""
        if source.media_type != PDF_TYPE and source.media_type not in IMAGE_TYPES:
            raise RecognitionFailed(f"{source.media_type} is not a PDF or an image: there is nothing to OCR")
        pages = source.pages
        if pages is not None and len(pages) > self._limits.max_pages:
            raise RecognitionFailed(
                f"{len(pages)} pages need OCR; the limit is {self._limits.max_pages}: split the document"
            )
        content = source.read()
        expected = len(pages) if pages is not None else 1
        timeout = max(self._limits.min_timeout_seconds, self._limits.seconds_per_page * expected)
        header = {"media_type": source.media_type, "pages": pages, "max_pages": self._limits.max_pages}
        # Validated: never trust the shape of what a process that read hostile input sends back.
        answer = sandboxed(
            _recognise_in_child,
            pack(header, content),
            _recognised,
            timeout_seconds=timeout,
            memory_limit_bytes=self._limits.memory_limit_bytes,
            answer_too_large=json.dumps({"failed": "the recognised text is too large"}).encode(),
            max_answer_bytes=MAX_ANSWER_BYTES,
        )
        match answer:
            case TimedOut():
                raise RecognitionFailed(f"OCR took longer than {timeout:g} seconds")
            case OutOfMemory():
                raise RecognitionFailed(_PAGE_OUT_OF_MEMORY)
            case KilledFromOutside(exitcode=exitcode) | Crashed(exitcode=exitcode):
                raise RecognitionFailed(f"the OCR engine crashed on this document (exit {exitcode})")
            case AnswerTooLarge():
                raise RecognitionFailed("the recognised text is too large")
            case Unreadable(error=error):
                raise RecognitionFailed(
                    "the OCR engine's answer could not be read (recorded for the operators)"
                ) from error
        return answer

    def collect(self, job: RecognitionJob) -> RecognitionResult | None:
        raise ValueError(f"{ENGINE} finishes in `start`; job {job.job_id} is not one of its jobs")

    def discard(self, job: RecognitionJob) -> None:
        return None  # it never holds a job


def _recognised(answer: bytes) -> RecognitionResult:
    decoded = json.loads(answer)
    if "failed" in decoded:
        raise RecognitionFailed(str(decoded["failed"])[:2000])
    return RecognitionResult.model_validate(decoded["result"])


def _recognise_in_child(payload: bytes) -> bytes:
    header, (content,) = unpack(payload)
    try:
        result = _recognise(content, header["media_type"], header["pages"], header["max_pages"])
    except RecognitionFailed as failure:
        return json.dumps({"failed": failure.detail}).encode()
    except MemoryError:
        return json.dumps({"failed": _PAGE_OUT_OF_MEMORY}).encode()
    except Exception as error:
        # The library's words go to the log (the child's stderr), never into the detail the file's owner reads.
        print(f"OCR failed: {type(error).__name__}: {error}", file=sys.stderr)
        return json.dumps({"failed": f"the OCR engine could not read it ({type(error).__name__})"}).encode()
    return json.dumps({"result": result.model_dump(mode="json")}).encode()


def _recognise(content: bytes, media_type: str, pages: Sequence[int] | None, max_pages: int) -> RecognitionResult:
    from rapidocr import RapidOCR

    engine = RapidOCR(
        params={
            "Global.log_level": "error",
            # Every line is kept with its score: the low-confidence flag needs the bad ones too.
            "Global.text_score": 0.0,
            # Detection at most 1,600 pixels on the long side (the default keeps the short side at 736 or
            # more, so a 200-dpi page was detected at full size): a page read in half the time, and as
            # many words right on the generated scans (measured: 8.4 s → 5.3 s for five pages).
            "Det.limit_type": "max",
            "Det.limit_side_len": DETECTION_SIDE_PIXELS,
        }
    )
    read: list[RecognizedPage] = []
    for number, image in _page_images(content, media_type, pages, max_pages):
        read.append(_read_page(engine, number, image))
    return RecognitionResult(
        engine=ENGINE,
        pages=tuple(read),
        usage=Usage(provider=ENGINE, operation="rapidocr:recognize", model="PP-OCRv6", priced=False, pages=len(read)),
    )


def _page_images(content: bytes, media_type: str, pages: Sequence[int] | None, max_pages: int) -> Any:
    """(page number, BGR array) for each page to read, rendered or decoded one at a time."""
    if media_type == PDF_TYPE:
        return _pdf_pages(content, pages, max_pages)
    return _image_pages(content, pages, max_pages)


def _pdf_pages(content: bytes, pages: Sequence[int] | None, max_pages: int) -> Any:
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(content)
    except pdfium.PdfiumError as error:
        print(f"PDFium could not open the PDF: {error}", file=sys.stderr)
        raise RecognitionFailed("the PDF could not be opened for OCR: re-save it and upload it again") from error
    try:
        total = len(document)
        for number in pages if pages is not None else range(1, min(total, max_pages) + 1):
            if not 1 <= number <= total:
                raise RecognitionFailed(f"page {number} does not exist: the document has {total} pages")
            page = document[number - 1]
            try:
                width, height = page.get_size()
                scale = min(RENDER_DPI / 72, math.sqrt(MAX_PAGE_PIXELS / max(width * height, 1.0)))
                # PDFium applies the page's /Rotate: the render is the page as it is displayed.
                yield number, _bgr(page.render(scale=scale).to_pil())
            finally:
                page.close()
    finally:
        document.close()


def _image_pages(content: bytes, pages: Sequence[int] | None, max_pages: int) -> Any:
    from PIL import Image, ImageOps, ImageSequence

    Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS
    try:
        # Only the decoders of the image types Quire accepts (JPEG's also opens a phone's MPO).
        image = Image.open(io.BytesIO(content), formats=("JPEG", "PNG", "TIFF"))
        width, height = image.size
        if width * height > MAX_IMAGE_PIXELS:
            raise RecognitionFailed(
                f"the image is {width}x{height} pixels; the limit is {MAX_IMAGE_PIXELS // 1_000_000} megapixels"
            )
        frames = getattr(image, "n_frames", 1)
        wanted = set(pages) if pages is not None else set(range(1, min(frames, max_pages) + 1))
        if any(number > frames for number in wanted):
            raise RecognitionFailed(f"pages {sorted(wanted)} were asked for; the image has {frames}")
        for number, frame in enumerate(ImageSequence.Iterator(image), start=1):
            if number > max(wanted, default=0):
                break
            if number in wanted:
                frame_width, frame_height = frame.size
                if frame_width * frame_height > MAX_IMAGE_PIXELS:  # each frame has a header of its own
                    raise RecognitionFailed(
                        f"page {number} is {frame_width}x{frame_height} pixels;"
                        f" the limit is {MAX_IMAGE_PIXELS // 1_000_000} megapixels"
                    )
                # A phone photo's EXIF orientation is how it is displayed: boxes are on that view.
                yield number, _bgr(ImageOps.exif_transpose(frame))
    except Image.DecompressionBombError as error:
        raise RecognitionFailed(
            f"the image declares more pixels than the limit of {MAX_IMAGE_PIXELS // 1_000_000} megapixels"
        ) from error
    except (OSError, SyntaxError, ValueError) as error:
        print(f"the image could not be decoded: {type(error).__name__}: {error}", file=sys.stderr)
        raise RecognitionFailed(
            "the image could not be decoded: re-save it as PNG or JPEG and upload it again"
        ) from error


def _bgr(image: Any) -> Any:
    """An 8-bit BGR array, the layout OpenCV and RapidOCR expect of an array."""
    import numpy as np

    return np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])


def _read_page(engine: Any, number: int, image: Any) -> RecognizedPage:
    import numpy as np

    height, width = image.shape[:2]
    # Read the page as it is first: most scans are upright, and then one pass is all it costs. Its text
    # boxes decide the orientation; a turned page is read again, upright.
    output = _ocr(engine, image)
    quarter_turns = _orientation(engine, image, _regions(output, image))  # counter-clockwise turns
    upright = image
    if quarter_turns:
        upright = np.ascontiguousarray(np.rot90(image, quarter_turns))
        output = _ocr(engine, upright)
    frame = _Frame(upright.shape[1], upright.shape[0], quarter_turns, width, height)
    lines: list[RecognizedLine] = []
    unreadable: list[RecognizedLine] = []
    if getattr(output, "txts", None):
        words_of = output.word_results if output.word_results and len(output.word_results) == len(output.txts) else None
        for index, (text, score, box) in enumerate(zip(output.txts, output.scores, output.boxes, strict=True)):
            words = words_of[index] if words_of is not None else ()
            line = _line(str(text), float(score), box, words, frame)
            if line is None:
                continue
            (lines if line.confidence >= MIN_LINE_CONFIDENCE else unreadable).append(line)
    return RecognizedPage(
        page=number,
        rotation_degrees=(-90 * quarter_turns) % 360,  # clockwise, as a viewer would turn the page
        lines=tuple(lines),
        unreadable_lines=tuple(unreadable),
    )


def _ocr(engine: Any, image: Any) -> Any:
    return engine(image, use_det=True, use_cls=True, use_rec=True, return_word_box=True)


def _orientation(engine: Any, image: Any, boxes: list[tuple[float, float, tuple[int, int, int, int]]]) -> int:
    """0..3 counter-clockwise quarter turns that make the page's text read left to right, upright, from
    the text `boxes` detected on it as it is."""
    import numpy as np

    if not boxes:
        return 0
    turns = 0
    tall = sum(w * h for w, h, _ in boxes if h > w * 1.5)
    wide = sum(w * h for w, h, _ in boxes if w > h * 1.5)
    if tall > wide:
        turns = 1
        image = np.ascontiguousarray(np.rot90(image, 1))
        boxes = _regions(engine(image, use_det=True, use_cls=False, use_rec=False), image)
    upside_down = 0.0
    upright = 0.0
    for box_width, box_height, (left, top, right, bottom) in sorted(boxes, key=lambda b: -b[0])[:ORIENTATION_SAMPLE]:
        if box_width < box_height * 2:
            continue
        crop = np.ascontiguousarray(image[top:bottom, left:right])
        if crop.size == 0:
            continue
        verdict = engine(crop, use_det=False, use_cls=True, use_rec=False)
        label, score = verdict.cls_res[0] if getattr(verdict, "cls_res", None) else ("0", 0.0)
        if label == "180":
            upside_down += box_width * float(score)
        else:
            upright += box_width * float(score)
    if upside_down > upright:
        turns += 2
    return turns % 4


def _regions(found: Any, image: Any) -> list[tuple[float, float, tuple[int, int, int, int]]]:
    """(width, height, axis-aligned pixel box) of each text region in an engine's output."""
    boxes = getattr(found, "boxes", None)
    if boxes is None:
        return []
    limit_y, limit_x = image.shape[:2]
    regions = []
    for quad in boxes:
        (x0, y0), (x1, y1), (x2, y2), _ = quad
        box_width = math.dist((x0, y0), (x1, y1))
        box_height = math.dist((x1, y1), (x2, y2))
        xs = [point[0] for point in quad]
        ys = [point[1] for point in quad]
        pixel_box = (
            max(int(min(xs)), 0),
            max(int(min(ys)), 0),
            min(math.ceil(max(xs)), limit_x),
            min(math.ceil(max(ys)), limit_y),
        )
        regions.append((box_width, box_height, pixel_box))
    return regions


@dataclass(frozen=True)
class _Frame:
    """The upright image OCR read, and the displayed page it was turned from."""

    upright_width: int
    upright_height: int
    quarter_turns: int
    page_width: int
    page_height: int

    def box(self, points: Sequence[Any]) -> BoundingBox:
        """Pixel points on the upright image → a normalised box on the page as displayed."""
        mapped = [self._unturned(float(x), float(y)) for x, y in points]
        left = _unit(min(x for x, _ in mapped) / self.page_width)
        top = _unit(min(y for _, y in mapped) / self.page_height)
        right = _unit(max(x for x, _ in mapped) / self.page_width)
        bottom = _unit(max(y for _, y in mapped) / self.page_height)
        return BoundingBox(left=left, top=top, width=right - left, height=bottom - top)

    def _unturned(self, x: float, y: float) -> tuple[float, float]:
        """Undo the counter-clockwise quarter turns (numpy.rot90), one at a time."""
        width, height = self.upright_width, self.upright_height
        for _ in range(self.quarter_turns % 4):
            # A turn maps (x, y) of a w-by-h image to (y, w - x) of an h-by-w one; undoing it on the
            # turned image (width h, height w) is (height - y, x).
            x, y = height - y, x
            width, height = height, width
        return x, y


def _line(text: str, score: float, quad: Any, words: Sequence[Any], frame: _Frame) -> RecognizedLine | None:
    text = " ".join(text.split())
    if not text:
        return None
    height = max(math.dist(tuple(quad[1]), tuple(quad[2])), 1.0)
    segments: list[list[tuple[str, Any]]] = []
    previous_right: float | None = None
    for word_text, _word_score, word_quad in words:
        left = min(point[0] for point in word_quad)
        if previous_right is not None and left - previous_right > height * COLUMN_GAP_LINE_HEIGHTS:
            segments.append([])
        if not segments:
            segments.append([])
        segments[-1].append((str(word_text), word_quad))
        previous_right = max(point[0] for point in word_quad)
    if len(segments) > 1:
        # The recogniser drops the spaces of a wide gap ("1,204      12.5%" reads "1,20412.5%"): the
        # words' own boxes put them back, one space per column gap.
        text = " ".join(" ".join(word for word, _ in segment) for segment in segments)
    return RecognizedLine(
        text=text,
        box=frame.box(quad),
        confidence=min(max(score, 0.0), 1.0),
        segments=tuple(
            RecognizedSegment(
                text=" ".join(word for word, _ in segment),
                box=frame.box([point for _, word_quad in segment for point in word_quad]),
            )
            for segment in segments
        )
        if len(segments) > 1
        else (),
    )


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)
