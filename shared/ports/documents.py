"""Work on document bytes: parsing, drawing pages, PDF page operations and rendering exports. Inputs are
attacker-controlled: callers run them in the sandbox's bounded child.

The docstrings are the contracts adapters keep (docs/architecture.md, "Ports and their adapters").
"""

from collections.abc import Sequence
from typing import Protocol

from shared.domain.document import ExtractionLimits, ExtractionOutcome
from shared.domain.exports import ExportFormat, RenderedFile, RenderLimits, RenderRequest
from shared.domain.page_images import PageOutcome
from shared.domain.pdf_tools import PagePick, PdfInput


class DocumentParser(Protocol):
    """Bytes of one of `media_types` → a located block list, within `limits`.

    A document problem (malformed, encrypted, too many pages, …) is a returned ExtractionFailure, never
    an exception; text past the limits is cut and the document says so. The wall-clock limit is
    enforced by the caller, from outside: a parser stuck in a loop cannot check its own clock.
    """

    media_types: frozenset[str]

    def parse(self, content: bytes, limits: ExtractionLimits) -> ExtractionOutcome: ...


class PageRasterizer(Protocol):
    """One page of a PDF or an image drawn as a PNG of the page as it is displayed, sized by
    `domain.page_images.fit_page` and recording the document's page count in its text chunk
    (`PAGE_COUNT_KEYWORD`). Inputs are attacker-controlled: callers run it in a bounded child (its class is
    built again there with no arguments). What the bytes hold (no such page, a damaged or protected file, more
    pixels than allowed) is an answer, never an exception."""

    media_types: frozenset[str]

    def rasterize(self, content: bytes, media_type: str, page: int) -> PageOutcome: ...


class PdfOperations(Protocol):
    """Page-level work on PDFs (pypdf). Inputs are attacker-controlled: callers run these in a bounded child.
    A problem with an input (encrypted, malformed, no such page) raises PdfInputProblem naming it."""

    def compose(
        self, inputs: Sequence[PdfInput], picks: Sequence[PagePick], *, outline: bool, max_pages: int
    ) -> tuple[bytes, int]:
        """The picked pages in order as one PDF (and its page count); with `outline`, an outline entry per pick
        naming its input."""
        ...

    def watermark(self, source: PdfInput, text: str, *, opacity: float, max_pages: int) -> tuple[bytes, int]:
        """`text` across every page, upright as each page is displayed (rotated pages included)."""
        ...


class ArtifactRenderer(Protocol):
    """Blocks (with their citations) → the bytes of one format, deterministically: the same request always
    gives the same bytes. Content that cannot be rendered within `limits` raises RenderFailed with a sentence."""

    format: ExportFormat

    def render(self, request: RenderRequest, limits: RenderLimits) -> RenderedFile: ...
