"""Situating sentences for a batch of chunks (issue 37, docs/search.md#contextual-chunks): found in the cache by
the chunk's hash, or written by the ChunkSituator for the misses, metered, under the tenant's daily generation
limit, within the embed step's time. Whatever fails, the batch goes on: a chunk without a sentence keeps its
deterministic context, and the gap says why (a re-index asks again, and pays only for what is still missing)."""

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from uuid import UUID

from shared.domain.chunk_situations import (
    GeneratedSituation,
    SituationRequest,
    request_for,
    situating_model,
    situation_key,
)
from shared.domain.errors import CapabilityUnavailable, LimitExceeded
from shared.domain.knowledge import ChunkDraft
from shared.domain.usage import Usage, converse_usage
from shared.observability import logger
from shared.ports import ChunkSituator, SituationCache
from shared.services.limits import SpendLimits

# Calls in flight at once for one batch: Bedrock's per-model quotas are per minute, and a batch is 128 chunks.
SITUATING_WORKERS = 4
# The part of the embed step's 300 s its sentences may take; the chunks left when it is spent go without.
SITUATING_SECONDS = 150.0
# The tokens a call is reckoned to spend before it is made (its input in characters / 3, then this much output).
_OUTPUT_TOKENS_RECKONED = 120

# Told what the sentences written for a batch consumed, after the model answered and before they are kept.
OnGenerated = Callable[[Usage], None]


@dataclass(frozen=True)
class SituatedBatch:
    """Each chunk's sentence (None: it has none), and why some have none."""

    situations: tuple[str | None, ...]
    gap: str | None = None
    generated: int = 0
    cached: int = 0


class ChunkSituations:
    def __init__(
        self,
        situator: ChunkSituator,
        cache: SituationCache,
        *,
        spend: SpendLimits | None = None,
        workers: int = SITUATING_WORKERS,
        budget_seconds: float = SITUATING_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self._situator = situator
        self._cache = cache
        self._spend = spend
        self._workers = workers
        self._budget = budget_seconds
        self._clock = clock

    @property
    def model_id(self) -> str:
        """The model and prompt the sentences are cached under and a version records (`situating_model`)."""
        return situating_model(self._situator.model_id, self._situator.prompt_version)

    @property
    def enabled(self) -> bool:
        """Whether a model writes sentences here (on AWS with QUIRE_CHUNK_CONTEXT_MODEL_ID); else chunks keep their
        deterministic context and nothing is said of it (it is no gap, it is off)."""
        return self._situator.capability().available

    def situate(
        self,
        tenant_id: str,
        file_id: UUID,
        drafts: Sequence[ChunkDraft],
        *,
        document_head: str,
        on_generated: OnGenerated,
    ) -> SituatedBatch:
        """A sentence for each of `drafts` (a batch, in document order) where the cache has one or the model writes
        one; never raises for the model, the cache or the limit."""
        if not drafts:
            return SituatedBatch(())
        model = self.model_id
        keys = [situation_key(draft) for draft in drafts]
        try:
            found = self._cache.find(tenant_id, file_id, model, keys)
        except Exception:
            # Unread, the cache would be paid for again: no sentence is written until it answers.
            logger.exception("chunk contexts not read from their cache")
            return _without(keys, {}, "the cache of chunk contexts could not be read; a re-index asks again")
        wanted: dict[str, int] = {}  # each missing key's first chunk, in batch order
        for index, key in enumerate(keys):
            if key not in found:
                wanted.setdefault(key, index)
        if not wanted:
            return SituatedBatch(tuple(found[key] for key in keys), cached=len(keys))
        requests = {key: request_for(drafts, index, document_head) for key, index in wanted.items()}
        refusal = self._refusal(tenant_id, requests.values())
        if refusal is not None:
            return _without(keys, found, str(refusal))
        written, failure = self._generate(requests)
        if written:
            on_generated(
                converse_usage(
                    self._situator.model_id,
                    input_tokens=sum(situation.input_tokens for situation in written.values()),
                    output_tokens=sum(situation.output_tokens for situation in written.values()),
                )
            )
            try:
                self._cache.keep(tenant_id, file_id, model, {key: situation.text for key, situation in written.items()})
            except Exception:
                logger.exception("chunk contexts not kept in their cache; a re-index pays for them again")
        known = {**found, **{key: situation.text for key, situation in written.items()}}
        missing = sum(1 for key in keys if key not in known)
        gap = None
        if missing:
            gap = f"{missing} of {len(keys)} chunks have no situating context: {failure or 'no answer in time'}"
        situations = tuple(known.get(key) for key in keys)
        logger.info(
            "chunks situated", extra={"cached": len(found), "written": len(written), "missing": missing, "gap": gap}
        )
        return SituatedBatch(situations, gap=gap, generated=len(written), cached=len(found))

    def _refusal(self, tenant_id: str, requests: Iterable[SituationRequest]) -> LimitExceeded | None:
        """Whether writing these sentences may pass the tenant's daily generation limit (reckoned before)."""
        if self._spend is None:
            return None
        reckoned = sum(
            (len(request.document) + len(request.before) + len(request.chunk) + len(request.after)) // 3
            + _OUTPUT_TOKENS_RECKONED
            for request in requests
        )
        return self._spend.generation_refusal(tenant_id, tokens=reckoned, then="re-index")

    def _generate(self, requests: dict[str, SituationRequest]) -> tuple[dict[str, GeneratedSituation], str | None]:
        """The sentences the model wrote, by key, and the first reason one was not, within the time budget."""
        deadline = self._clock() + self._budget
        written: dict[str, GeneratedSituation] = {}
        failure: str | None = None
        pending = list(requests.items())
        with ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="situate") as pool:
            running: dict[Future[GeneratedSituation], str] = {}
            while pending or running:
                while pending and len(running) < self._workers and self._clock() < deadline:
                    key, request = pending.pop(0)
                    running[pool.submit(self._situator.situate, request)] = key
                if not running:
                    break  # out of time: what is left goes without
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    key = running.pop(future)
                    try:
                        written[key] = future.result()
                    except CapabilityUnavailable as error:
                        failure = failure or error.reason
                    except Exception as error:  # a bug or an SDK surprise: the chunk goes on without
                        logger.exception("a chunk's context failed")
                        failure = failure or f"the chunk context model failed ({type(error).__name__})"
        if pending and failure is None:
            failure = f"the step's {self._budget:.0f} s for chunk contexts ran out"
        return written, failure


def _without(keys: Sequence[str], found: dict[str, str], reason: str) -> SituatedBatch:
    missing = sum(1 for key in keys if key not in found)
    gap = f"{missing} of {len(keys)} chunks have no situating context: {reason}"
    logger.info("chunks not situated", extra={"cached": len(found), "missing": missing, "gap": gap})
    return SituatedBatch(tuple(found.get(key) for key in keys), gap=gap, cached=len(found))
