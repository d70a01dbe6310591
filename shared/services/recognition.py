"""OCR and vision for what has no text of its own: PDF pages without a usable text layer, and images.

The fallback is narrow on purpose (seeds/000 "OCR and vision"): only pages the text-layer parser found
empty go to OCR (a mixed PDF keeps its text layer everywhere else), an image always does, and an
encrypted or malformed document never reaches here — OCR would not fix it and would cost money to
reach the same conclusion. An image is also described by a vision model where one is configured; the
description is its own kind of block, never mixed with what OCR transcribed.
"""

from dataclasses import dataclass

from shared.domain.document import ExtractedDocument
from shared.domain.recognition import MAX_OCR_PAGES
from shared.domain.uploads import ACCEPTED_TYPES

IMAGE_TYPES = frozenset(accepted.media_type for accepted in ACCEPTED_TYPES if accepted.media_type.startswith("image/"))


@dataclass(frozen=True)
class RecognitionPlan:
    """What a version needs beyond its text layer."""

    ocr_pages: tuple[int, ...]
    # Pages that need OCR beyond MAX_OCR_PAGES: left without text, and said so.
    unread_pages: tuple[int, ...]
    describe: bool
    # OCR every page, replacing the text layer (a rescan asked for it).
    replaces_text_layer: bool

    @property
    def needed(self) -> bool:
        return bool(self.ocr_pages) or self.describe


def recognition_plan(
    media_type: str, document: ExtractedDocument, *, every_page: bool, max_pages: int = MAX_OCR_PAGES
) -> RecognitionPlan:
    image = media_type in IMAGE_TYPES
    every = tuple(range(1, (document.page_count or 1) + 1))
    wanted = every if image or every_page else document.pages_without_text
    return RecognitionPlan(
        ocr_pages=wanted[:max_pages],
        unread_pages=wanted[max_pages:],
        describe=image,
        replaces_text_layer=every_page and not image,
    )
