"""The tenant's spend limits, checked before anything is spent: against the usage ledger (OCR pages, images,
embedding tokens, generation tokens, rerank queries today; OCR runs of one file in the last hour) and the file versions
(declared upload bytes today). In a request a refusal is raised (a 429); in the pipeline and where a model call
can fall back to what needs none (answers, summaries) it is returned, and the caller says why.

Checked, not reserved: attempts running at once each see what the ledger held when they looked, so together
they may pass a limit by at most what they spend between the check and the ledger row (one document's OCR,
one embed batch, one ticket each). The limits bound a tenant's spend per day, not to the page.
"""

import math
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import UUID

from shared.domain.errors import LimitExceeded
from shared.domain.limits import RESCAN_WINDOW, LimitName, TenantLimits, daily_refusal, day_start, rescan_refusal
from shared.ports import FileCatalog, UsageLedger


class SpendLimits:
    def __init__(
        self,
        ledger: UsageLedger,
        catalog: FileCatalog,
        limits: TenantLimits,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._ledger = ledger
        self._catalog = catalog
        self._limits = limits
        self._clock = clock

    def ocr_refusal(self, tenant_id: str, *, pages: int, then: str = "try again") -> LimitExceeded | None:
        """Whether OCR of `pages` more pages today would pass the tenant's daily OCR limit."""
        limit = self._limits.ocr_pages_per_day
        if limit is None:
            return None
        now = self._clock()
        spent = self._ledger.spent_since(tenant_id, day_start(now)).ocr_pages
        return daily_refusal(LimitName.OCR_PAGES, limit=limit, spent=spent, asked=pages, now=now, then=then)

    def vision_refusal(self, tenant_id: str, *, images: int = 1, then: str = "try again") -> LimitExceeded | None:
        limit = self._limits.vision_images_per_day
        if limit is None:
            return None
        now = self._clock()
        spent = self._ledger.spent_since(tenant_id, day_start(now)).vision_images
        return daily_refusal(LimitName.VISION_IMAGES, limit=limit, spent=spent, asked=images, now=now, then=then)

    def embedding_refusal(self, tenant_id: str, *, tokens: int, then: str = "try again") -> LimitExceeded | None:
        limit = self._limits.embedding_tokens_per_day
        if limit is None:
            return None
        now = self._clock()
        spent = self._ledger.spent_since(tenant_id, day_start(now)).embedding_tokens
        return daily_refusal(LimitName.EMBEDDING_TOKENS, limit=limit, spent=spent, asked=tokens, now=now, then=then)

    def generation_refusal(self, tenant_id: str, *, tokens: int, then: str = "try again") -> LimitExceeded | None:
        """Whether a model call inside a request (an answer's draft, a summary) that may spend `tokens` more
        input and output tokens today would pass the tenant's daily generation limit. Returned, not raised:
        the caller falls back to what needs no model (evidence only, an extractive outline) with its sentence."""
        limit = self._limits.generation_tokens_per_day
        if limit is None:
            return None
        now = self._clock()
        spent = self._ledger.spent_since(tenant_id, day_start(now)).generation_tokens
        return daily_refusal(LimitName.GENERATION_TOKENS, limit=limit, spent=spent, asked=tokens, now=now, then=then)

    def rerank_refusal(self, tenant_id: str, *, queries: int = 1) -> LimitExceeded | None:
        """Whether `queries` more calls of a metered reranker today would pass the tenant's daily rerank limit.
        Returned, not raised: the search keeps fusion order and says why (shared/services/reranking.py)."""
        limit = self._limits.rerank_queries_per_day
        if limit is None:
            return None
        now = self._clock()
        spent = self._ledger.spent_since(tenant_id, day_start(now)).rerank_queries
        return daily_refusal(
            LimitName.RERANK_QUERIES,
            limit=limit,
            spent=spent,
            asked=queries,
            now=now,
            then="searches are reranked again",
        )

    def transcription_refusal(
        self, tenant_id: str, *, seconds: float, then: str = "process the file again"
    ) -> LimitExceeded | None:
        """Whether transcribing `seconds` more of recording today would pass the tenant's daily minutes, counted
        in whole minutes begun (a 10-second clip is a minute of the limit, as it is of a bill)."""
        limit = self._limits.transcription_minutes_per_day
        if limit is None:
            return None
        now = self._clock()
        spent = math.ceil(self._ledger.spent_since(tenant_id, day_start(now)).transcription_seconds / 60)
        asked = max(1, math.ceil(seconds / 60))
        return daily_refusal(LimitName.TRANSCRIPTION_MINUTES, limit=limit, spent=spent, asked=asked, now=now, then=then)

    def ensure_upload_fits(self, tenant_id: str, byte_size: int) -> None:
        """A ticket for `byte_size` more declared bytes today, refused before anything is recorded or signed."""
        limit = self._limits.upload_bytes_per_day
        if limit is None:
            return
        now = self._clock()
        spent = self._catalog.declared_bytes_since(tenant_id, day_start(now))
        refusal = daily_refusal(LimitName.UPLOAD_BYTES, limit=limit, spent=spent, asked=byte_size, now=now)
        if refusal is not None:
            raise refusal

    def ensure_rescan_allowed(self, tenant_id: str, file_id: UUID, *, pages: int) -> None:
        """A rescan of the file: under its OCR runs per hour, and its `pages` within the day's OCR limit."""
        now = self._clock()
        if self._limits.rescans_per_file_per_hour is not None:
            runs = self._ledger.ocr_runs_since(tenant_id, file_id, now - RESCAN_WINDOW)
            refusal = rescan_refusal(self._limits.rescans_per_file_per_hour, runs, now=now)
            if refusal is not None:
                raise refusal
        refusal = self.ocr_refusal(tenant_id, pages=pages, then="scan it again")
        if refusal is not None:
            raise refusal
