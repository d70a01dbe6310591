"""Page images: one page of a stored PDF or image drawn as a PNG, for a viewer that highlights a citation's box on
the page it cites (`GET /v1/files/{id}/pages/{n}`).

Read exactly as the file's bytes are (`FileService.cited_version`: the read role, the malware gate), drawn in
the sandbox's child (`isolated.render_page`: a tenant's bytes reach PDFium and Pillow only there, bounded in time
and memory), kept as a derived object beside the original (`page_image_key`, so the deletion sweep takes it with
the original, and reconciliation accounts for it while the version lives), and served by a signed URL as
`image/png`; a second request for the page finds the drawing and draws nothing.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import assert_never
from uuid import UUID

from shared.domain.auth import Principal
from shared.domain.errors import InvalidRequest, UnsupportedMediaType
from shared.domain.exports import RenderFailed
from shared.domain.files import FileVersionRecord
from shared.domain.page_images import (
    MAX_PAGE_NUMBER,
    MAX_PAGE_SIDE,
    NO_PAGES,
    PAGE_IMAGE_TYPE,
    PNG_HEADER_BYTES,
    DrawnPage,
    PageOutcome,
    PageOutOfRange,
    PageUnreadable,
    page_image_filename,
    page_image_key,
    read_png_header,
)
from shared.observability import logger
from shared.ports import MAX_SIGNED_READ_LIFETIME, FileContentStore, PageRasterizer
from shared.sandbox import (
    AnswerTooLarge,
    Crashed,
    Failure,
    KilledFromOutside,
    OutOfMemory,
    TimedOut,
    Unreadable,
    dotted_name,
    pack,
    sandboxed,
    unpack,
)
from shared.services import isolated
from shared.services.files import FileService

# A page is drawn on the request path: inside the API function's 29 seconds with the original's read before it,
# and inside its memory beside the request itself (the original is in the parent and the child both).
PAGE_DRAW_SECONDS = 15.0
PAGE_DRAW_MEMORY_BYTES = 768 * 1024 * 1024
# A 1600 x 1600 drawing of noise is about 7.7 MB as a PNG: anything much larger is not a drawing of a page.
MAX_PAGE_IMAGE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class PageImage:
    """One page's drawing: a signed URL to it, or (for a store that cannot sign) its bytes."""

    page: int
    page_count: int
    width: int
    height: int
    version_id: UUID
    filename: str
    url: str | None = None
    expires_at: datetime | None = None
    content: bytes | None = None


@dataclass(frozen=True)
class _Kept:
    key: str
    object_version: str | None
    drawn: DrawnPage | None  # the drawing itself, when this request made it
    page_count: int
    width: int
    height: int


class PageImages:
    def __init__(
        self,
        files: FileService,
        content: FileContentStore,
        rasterizer: PageRasterizer,
        *,
        max_original_bytes: int,
        timeout_seconds: float = PAGE_DRAW_SECONDS,
        memory_limit_bytes: int = PAGE_DRAW_MEMORY_BYTES,
    ) -> None:
        self._files = files
        self._content = content
        self._rasterizer = rasterizer
        # The child builds the rasterizer again from its class: one that cannot be named fails here, at start.
        self._rasterizer_name = dotted_name(type(rasterizer))
        self._max_original_bytes = max_original_bytes
        self._timeout = timeout_seconds
        self._memory_limit = memory_limit_bytes

    def page(self, principal: Principal, file_id: UUID, page: int, *, version_id: UUID | None) -> PageImage:
        """Page `page` (from 1) of the version (the newest stored one when `version_id` is None) as a PNG at most
        MAX_PAGE_SIDE pixels on its longest side. Unknown or unentitled: NotFound; deleted: VersionDeleted; not
        yet found clean: NotReady; a type without pages: UnsupportedMediaType; no such page: InvalidRequest
        naming the page count; a page that cannot be drawn: RenderFailed with its sentence."""
        version = self._files.cited_version(principal, file_id, version_id)
        if version.media_type not in self._rasterizer.media_types:
            raise UnsupportedMediaType(NO_PAGES.format(media_type=version.media_type, file_id=file_id))
        if not 1 <= page <= MAX_PAGE_NUMBER:
            raise InvalidRequest(f"page must be a number from 1 (at most {MAX_PAGE_NUMBER:,}), not {page}")
        kept = self._kept(version, page) or self._draw(
            version, page, still=lambda: self._still_readable(principal, file_id, version)
        )
        image = PageImage(
            page=page,
            page_count=kept.page_count,
            width=kept.width,
            height=kept.height,
            version_id=version.version_id,
            filename=page_image_filename(version.filename, page),
        )
        signed = self._content.signed_read(
            kept.key,
            version_id=kept.object_version,
            filename=image.filename,
            lifetime=MAX_SIGNED_READ_LIFETIME,
            media_type=PAGE_IMAGE_TYPE,
        )
        if signed is not None:
            return replace(image, url=signed.url, expires_at=signed.expires_at)
        # A store that cannot sign: the drawing itself, through the API.
        if kept.drawn is not None:
            return replace(image, content=kept.drawn.png)
        png = self._content.get(kept.key, version_id=kept.object_version, max_bytes=MAX_PAGE_IMAGE_BYTES)
        return replace(image, content=png)

    def _kept(self, version: FileVersionRecord, page: int) -> _Kept | None:
        """The drawing an earlier request made, if it is there and says what it is."""
        key = page_image_key(version.storage_key, page, MAX_PAGE_SIDE)
        stored = self._content.head(key)
        if stored is None:
            return None
        try:
            header = read_png_header(
                self._content.read_range(key, version_id=stored.version_id, start=0, length=PNG_HEADER_BYTES)
            )
        except FileNotFoundError:
            return None  # removed between the two calls: drawn again
        if header is None or header.page_count is None or page > header.page_count:
            logger.warning("a kept page image could not be read back; drawing it again", extra={"page": page})
            return None
        return _Kept(key, stored.version_id, None, header.page_count, header.width, header.height)

    def _still_readable(self, principal: Principal, file_id: UUID, version: FileVersionRecord) -> None:
        """Raises VersionDeleted when the version was deleted since this request read it."""
        self._files.cited_version(principal, file_id, version.version_id)

    def _draw(self, version: FileVersionRecord, page: int, *, still: Callable[[], None]) -> _Kept:
        try:
            original = self._content.get(
                version.storage_key, version_id=version.storage_version_id, max_bytes=self._max_original_bytes
            )
        except FileNotFoundError:
            # The row was stored a moment ago: its bytes went with a deletion that committed since (VersionDeleted),
            # or they were removed outside Quire (StoredBytesMissing, a 410 that says so).
            still()
            raise
        except ValueError as error:
            raise RenderFailed(
                f"the file is larger than {self._max_original_bytes:,} bytes (the upload limit):"
                " its pages are not drawn"
            ) from error
        except Exception:
            # On AWS a withdrawn original answers AccessDenied (the bucket policy denies tagged objects): a deletion
            # that committed since this request began is a VersionDeleted, not a 500; anything else goes on up.
            still()
            raise
        outcome = draw_page(
            self._rasterizer_name,
            version.media_type,
            original,
            page,
            timeout_seconds=self._timeout,
            memory_limit_bytes=self._memory_limit,
        )
        if isinstance(outcome, PageOutOfRange):
            raise InvalidRequest(outcome.sentence)
        if isinstance(outcome, PageUnreadable):
            raise RenderFailed(outcome.sentence)
        key = page_image_key(version.storage_key, page, MAX_PAGE_SIDE)
        stored = self._content.put(key, outcome.png, content_type=PAGE_IMAGE_TYPE)
        # A deletion that committed while this drew has swept already: no link is handed out to what it left (the
        # reconciliation scan removes that drawing).
        still()
        return _Kept(key, stored.version_id, outcome, outcome.page_count, outcome.width, outcome.height)


def draw_page(
    rasterizer_name: str,
    media_type: str,
    original: bytes,
    page: int,
    *,
    timeout_seconds: float,
    memory_limit_bytes: int,
) -> PageOutcome:
    """Page `page` of `original` drawn in the sandbox's child by the rasterizer class `rasterizer_name`."""
    header = {"rasterizer": rasterizer_name, "media_type": media_type, "page": page}
    answer = sandboxed(
        isolated.render_page,
        pack(header, original),
        partial(_validated, page=page),
        timeout_seconds=timeout_seconds,
        memory_limit_bytes=memory_limit_bytes,
        max_answer_bytes=MAX_PAGE_IMAGE_BYTES,
        answer_too_large=isolated.page_answer(PageUnreadable(isolated.PAGE_OUT_OF_MEMORY)),
    )
    return drawing_outcome(answer, page)


def drawing_outcome(answer: PageOutcome | Failure, page: int) -> PageOutcome:
    """The child's validated answer, or what its end means: a page the limits refuse is unreadable; a timeout or a
    crash raises RenderFailed (retryable: not the page's fault)."""
    if not isinstance(answer, Failure):
        return answer
    match answer:
        case TimedOut(seconds=seconds):
            raise RenderFailed(
                f"drawing page {page} took longer than {seconds:g} seconds: it is not served", retryable=True
            )
        case AnswerTooLarge(limit_bytes=limit_bytes):
            return PageUnreadable(f"the drawing of page {page} is larger than {limit_bytes:,} bytes: not served")
        case OutOfMemory():
            return PageUnreadable(f"page {page} needs more memory to draw than allowed: it is not served")
        case Crashed(exitcode=exitcode) | KilledFromOutside(exitcode=exitcode):
            logger.error("a page rasterizer died", extra={"exitcode": exitcode, "page": page})
            raise RenderFailed(f"drawing page {page} failed (recorded for the operators)", retryable=True)
        case Unreadable(error=error):
            logger.error("a page rasterizer's answer could not be read", extra={"error": type(error).__name__})
            raise RenderFailed(f"drawing page {page} failed (recorded for the operators)", retryable=True) from error
        case _:
            assert_never(answer)


def _validated(answer: bytes, page: int) -> PageOutcome:
    header, blobs = unpack(answer)
    if "failed" in header:
        return PageUnreadable(str(header["failed"])[:1000])
    if "out_of_range" in header:
        count = header["out_of_range"]["page_count"]
        if not isinstance(count, int) or count < 0 or page <= count:
            raise ValueError("a page out of range that is not")
        return PageOutOfRange(page=page, page_count=count)
    drawn = header["drawn"]
    (png,) = blobs
    found = read_png_header(png[:PNG_HEADER_BYTES])
    if (
        found is None
        or drawn["page"] != page
        or (found.width, found.height, found.page_count) != (drawn["width"], drawn["height"], drawn["page_count"])
        or max(found.width, found.height) > MAX_PAGE_SIDE
        or not isinstance(found.page_count, int)
        or page > found.page_count
    ):
        raise ValueError("the drawing is not the PNG its header describes")
    return DrawnPage(png=png, page=page, page_count=found.page_count, width=found.width, height=found.height)
