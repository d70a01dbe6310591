"""Grounded answers (docs/answers.md): authorization → normalisation → the cache → hybrid retrieval with the title
lane → overlap deduplication → evidence within a budget → generation (or extraction) → validation → conflicts →
citations re-checked against the caller's access → deterministic confidence → persistence.

Retrieval always runs first and its evidence is kept whatever happens to generation: a generator that is absent,
throttled, timed out or returns something that does not validate leaves an extractive answer of the same
evidence (`evidence_only`), never an error and never model text without evidence behind it.
"""

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from shared.domain.answers import (
    Answer,
    AnswerCitation,
    AnswerClaim,
    AnswerFeedback,
    AnswerMethod,
    AnswerOutcome,
    AnswerRequest,
    ClaimKind,
    Evidence,
    EvidenceBlock,
    GeneratedDraft,
    Refusal,
    RefusalReason,
    StoredAnswer,
)
from shared.domain.auth import Principal
from shared.domain.errors import (
    CapabilityUnavailable,
    GenerationFailed,
    InvalidRequest,
    LimitExceeded,
    NotFound,
)
from shared.domain.grounding import (
    AMBIGUOUS_SUBJECT,
    SENTENCE_MARGIN,
    Sentence,
    Statement,
    ValidatedClaim,
    answer_as_readable,
    answer_hits,
    cache_key,
    confidence,
    deduplicated,
    disagreements,
    evidence_blocks,
    numbered_citations,
    out_of_scope,
    selected,
    supported_assumptions,
    validated_draft,
)
from shared.domain.search import Empty, EmptyReason, SearchMode, SearchQuery
from shared.domain.usage import RequestKind, converse_usage
from shared.observability import logger
from shared.ports import AnswerStore, AuthorizationPolicy, EmbeddingProvider, Generator, KnowledgeStore
from shared.services.limits import SpendLimits
from shared.services.metering import Metering
from shared.services.retrieval import Retrieval
from shared.services.sentence_ranking import SentenceRanking
from shared.services.sentence_vectors import SentenceVectors

# With no embedding, the share of the question's words a sentence must hold (with one, the model's own cosine floor,
# shared/domain/similarity.py). Measured on the demo corpus and the SciFact train claims (docs/answers.md).
LEXICAL_SENTENCE_FLOOR = 0.3
CANDIDATE_HITS = 20  # hits asked of retrieval before deduplication and the evidence budget
CACHE_LIFETIME = timedelta(days=1)


@dataclass(frozen=True)
class AnswerTuning:
    """How evidence is chosen and kept: a sentence is quoted when its similarity to the question reaches
    `sentence_floor` (`lexical_floor` when ranked by words; None: the embedding model's own, its
    `similarity_scale.sentence`); `candidate_hits` are asked of retrieval; an answer is served from the cache for
    `cache_lifetime`; a further sentence is quoted only within `sentence_margin` of the answering one. The answer
    evaluation calibrates them (`quire eval-answers`)."""

    sentence_floor: float | None = None
    lexical_floor: float = LEXICAL_SENTENCE_FLOOR
    candidate_hits: int = CANDIDATE_HITS
    cache_lifetime: timedelta = CACHE_LIFETIME
    sentence_margin: float = SENTENCE_MARGIN


DRAFT_TOKENS_ESTIMATE = 2_000  # the generator's maxTokens
EXTRACTIVE = "extractive"
# Part of every cache key: bumped whenever grounding's rules change (selection, validation, extraction,
# confidence), so an answer computed by older rules is never served.
GROUNDING_VERSION = "grounding-5"

_EMPTY_REFUSALS = {
    EmptyReason.NO_ACCESS: RefusalReason.NO_ACCESS,
    EmptyReason.NO_MATCH: RefusalReason.NO_MATCH,
    EmptyReason.BELOW_FLOOR: RefusalReason.BELOW_FLOOR,
}


@dataclass
class StageTimes:
    """Milliseconds spent per stage of one answer (the benchmark reads these)."""

    stages: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        begun = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + (time.perf_counter() - begun) * 1000


@dataclass
class _Composed:
    outcome: AnswerOutcome
    method: AnswerMethod | None
    claims: list[AnswerClaim]
    citations: list[AnswerCitation]
    refusal: RefusalReason | None = None
    assumptions: tuple[str, ...] = ()
    needs_review: bool = False
    fallback: str | None = None
    ambiguous: bool = False
    lexical_coverage: float = 0.0
    # A fallback where a model is configured: the next ask may get a generated answer, so it is never cached.
    transient: bool = False


class AnswerService:
    def __init__(
        self,
        *,
        authorization: AuthorizationPolicy,
        retrieval: Retrieval,
        knowledge: KnowledgeStore,
        embedder: EmbeddingProvider,
        generator: Generator,
        store: AnswerStore,
        spend: SpendLimits | None = None,
        metering: Metering | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        new_id: Callable[[], str] = lambda: str(uuid.uuid4()),
        tuning: AnswerTuning = AnswerTuning(),
        sentence_vectors: SentenceVectors | None = None,
    ) -> None:
        self._authorization = authorization
        self._retrieval = retrieval
        self._knowledge = knowledge
        self._embedder = embedder
        self._generator = generator
        self._store = store
        self._spend = spend
        self._metering = metering
        self._clock = clock
        self._new_id = new_id
        self._tuning = tuning
        self._ranking = SentenceRanking(
            retrieval=retrieval,
            embedder=embedder,
            # Not `or`: an empty cache has no length, so it is false.
            sentence_vectors=SentenceVectors() if sentence_vectors is None else sentence_vectors,
            sentence_floor=tuning.sentence_floor,
            lexical_floor=tuning.lexical_floor,
            sentence_margin=tuning.sentence_margin,
        )

    def answer(self, principal: Principal, request: AnswerRequest, times: StageTimes | None = None) -> Answer:
        times = times or StageTimes()
        query = SearchQuery(
            text=request.question, limit=self._tuning.candidate_hits, mode=request.mode, filters=request.filters
        )
        with times.stage("authorize"):
            collections = self._retrieval.searchable_collections(principal, query)
        model = self._generator.model_id if self._generator.capability().available else EXTRACTIVE
        prompt_version = self._generator.prompt_version if model != EXTRACTIVE else EXTRACTIVE
        prompt_version = f"{prompt_version}+{GROUNDING_VERSION}"
        if out_of_scope(request.question):
            return self._refused(principal, request, RefusalReason.OUT_OF_SCOPE, collections, prompt_version)
        if not collections:
            return self._refused(principal, request, RefusalReason.NO_ACCESS, collections, prompt_version)
        with times.stage("cache"):
            index_version = self._store.index_version(principal.tenant_id, collections)
            key = cache_key(
                tenant_id=principal.tenant_id,
                collections=collections,
                question=request.question,
                filters=request.filters,
                mode=request.mode.value,
                index_version=index_version,
                retrieval_settings=f"{self._retrieval.fingerprint}|{self._embedder.model_id}|{self._reading}",
                prompt_version=prompt_version,
                model=model,
            )
            hit = self._store.cached(principal.tenant_id, key, not_before=self._clock() - self._tuning.cache_lifetime)
            if hit is not None:
                return self._served_from_cache(principal, hit, request.question)
        with times.stage("retrieve"):
            outcome = self._retrieval.search(principal, query)
        if isinstance(outcome, Empty):
            return self._refused(
                principal,
                request,
                _EMPTY_REFUSALS[outcome.outcome],
                collections,
                prompt_version,
                index_version=index_version,
                # A refusal from the keyword lane alone (the embedder down) is not cached: the next ask may find more.
                key=key if outcome.vector_available or request.mode is SearchMode.KEYWORD else None,
                vector_available=outcome.vector_available,
            )
        with times.stage("select"):
            snapshots = {
                snapshot.chunk_id: snapshot
                for snapshot in self._knowledge.snapshots(
                    principal.tenant_id, collections, [hit.chunk_id for hit in outcome.hits]
                )
            }
            candidates = [
                Evidence(
                    evidence_id=hit.chunk_id,
                    snapshot=snapshots[hit.chunk_id],
                    score=hit.score,
                    vector_score=hit.vector_score,
                    lexical_score=hit.lexical_score,
                    direct_subject=hit.direct_subject,
                )
                for hit in outcome.hits
                if hit.chunk_id in snapshots
            ]
            evidence = selected(deduplicated(candidates))
        if not evidence:
            # Every hit's chunk went between the lanes and this read: nothing to answer from.
            return self._refused(
                principal, request, RefusalReason.NO_MATCH, collections, prompt_version, index_version=index_version
            )
        composed = self._composed(principal, request.question, evidence, outcome.vector_available, times)
        # Keyword only where the semantic lane should have run: an outage, not the answer; never cached.
        degraded = not outcome.vector_available and request.mode is not SearchMode.KEYWORD
        with times.stage("assemble"):
            answer = Answer(
                answer_id=self._new_id(),
                question=request.question,
                outcome=composed.outcome,
                method=composed.method,
                claims=tuple(composed.claims),
                citations=tuple(composed.citations),
                assumptions=composed.assumptions,
                needs_review=composed.needs_review,
                confidence=confidence(
                    claims=composed.claims,
                    citations=composed.citations,
                    evidence=evidence,
                    vector_available=outcome.vector_available,
                    ambiguous=composed.ambiguous,
                    extractive=composed.method is AnswerMethod.EXTRACTIVE,
                    lexical_coverage=composed.lexical_coverage,
                    scale=self._embedder.similarity_scale,
                ),
                refusal=Refusal.of(composed.refusal) if composed.refusal else None,
                fallback=composed.fallback,
                vector_available=outcome.vector_available,
                model=model if composed.method is AnswerMethod.GENERATED else None,
                prompt_version=prompt_version,
                index_version=index_version,
                created_at=self._clock(),
                hits=answer_hits(evidence, composed.citations),
            )
            # Permission at citation time: what the caller may read now, not when the lanes ran.
            readable = self._authorization.readable_collections(principal)
            present = frozenset(
                snapshot.chunk_id
                for snapshot in self._knowledge.snapshots(
                    principal.tenant_id, readable, [citation.chunk_id for citation in answer.citations]
                )
            )
            answer = answer_as_readable(answer, readable, present)
        with times.stage("persist"):
            self._store.save(
                StoredAnswer(
                    tenant_id=principal.tenant_id,
                    subject=principal.subject,
                    # A fallback, a degraded index or a withheld source is not cached: the next ask may differ.
                    cache_key=f"uncached:{answer.answer_id}"
                    if composed.transient or degraded or answer.withheld
                    else key,
                    collections=frozenset(citation.citation.collection_id for citation in answer.citations),
                    answer=answer,
                )
            )
        return answer

    def stored(self, principal: Principal, answer_id: str) -> Answer:
        """The caller's own answer, its citations re-checked against what the caller may read now."""
        return self._rechecked(principal, self._own(principal, answer_id).answer)

    def feedback(self, principal: Principal, answer_id: str, feedback: AnswerFeedback) -> str:
        """The caller's feedback on their own answer as they see it now (InvalidRequest for a citation number it
        does not show them): a number is the one shown, recorded as the stored citation it stands for."""
        own = self._own(principal, answer_id)
        if feedback.citation is not None:
            visible = self._rechecked(principal, own.answer)
            shown = {citation.number: citation.chunk_id for citation in visible.citations}
            if feedback.citation not in shown:
                raise InvalidRequest(
                    f"citation {feedback.citation} is not one of this answer's citations"
                    f" ({', '.join(map(str, sorted(shown))) or 'it shows none'})"
                )
            stored_number = {citation.chunk_id: citation.number for citation in own.answer.citations}
            feedback = feedback.model_copy(update={"citation": stored_number[shown[feedback.citation]]})
        recorded = self._store.add_feedback(principal.tenant_id, principal.subject, answer_id, feedback)
        if recorded is None:
            raise NotFound("no such answer")
        return recorded

    def _own(self, principal: Principal, answer_id: str) -> StoredAnswer:
        """The caller's own stored answer; not found as well when every collection it cited is one the caller can
        no longer read (as for any source they are not entitled to: whether it exists is not theirs to learn)."""
        stored = self._store.get(principal.tenant_id, principal.subject, answer_id)
        if stored is None or (
            stored.collections and not stored.collections & self._authorization.readable_collections(principal)
        ):
            raise NotFound("no such answer")
        return stored

    # --- composing ----------------------------------------------------------------------------------------

    def _composed(
        self, principal: Principal, question: str, evidence: Sequence[Evidence], vector: bool, times: StageTimes
    ) -> _Composed:
        fallback: str | None = None
        transient = False
        if self._generator.capability().available:
            with times.stage("generate"):
                draft = None
                blocks = evidence_blocks(evidence)
                refusal = self._spend_refusal(principal, blocks)
                if refusal is not None:
                    fallback, transient = f"{refusal}: evidence only", True
                else:
                    try:
                        draft = self._generator.generate(question, blocks)
                    except GenerationFailed as error:
                        # The model answered unusably: its tokens were spent all the same.
                        self._metered(principal, error.model, error.input_tokens, error.output_tokens, evidence)
                        fallback, transient = str(error), True
                    except CapabilityUnavailable as error:
                        fallback, transient = str(error), True
                    except Exception:
                        # An adapter's bug is not the caller's problem: the evidence still answers.
                        logger.exception("the generator failed unexpectedly")
                        fallback, transient = "the answer model failed unexpectedly: evidence only", True
                    else:
                        self._metered(principal, draft.model, draft.input_tokens, draft.output_tokens, evidence)
            if draft is not None:
                with times.stage("validate"):
                    generated = self._generated(draft, evidence, blocks)
                if generated is not None:
                    return generated
                fallback, transient = "the model's draft did not validate against the evidence: evidence only", True
        else:
            fallback = self._generator.capability().reason
        with times.stage("extract"):
            extracted = self._extracted(principal.tenant_id, question, evidence, vector)
        extracted.fallback = fallback
        extracted.transient = extracted.transient or transient
        return extracted

    def _spend_refusal(self, principal: Principal, blocks: Sequence[EvidenceBlock]) -> LimitExceeded | None:
        """The tenant's daily generation limit, checked before the model is called: a refused draft is an
        evidence-only answer saying why, never an error."""
        if self._spend is None:
            return None
        # A character is about a quarter of a token, and the draft's own tokens come on top.
        estimate = sum(len(block.text) for block in blocks) // 4 + DRAFT_TOKENS_ESTIMATE
        return self._spend.generation_refusal(principal.tenant_id, tokens=estimate, then="ask again")

    def _metered(
        self, principal: Principal, model: str, input_tokens: int, output_tokens: int, evidence: Sequence[Evidence]
    ) -> None:
        if self._metering is None:
            return
        self._metering.record_request(
            principal,
            kind=RequestKind.ANSWER,
            collections=frozenset(piece.snapshot.collection_id for piece in evidence),
            usage=converse_usage(model, input_tokens=input_tokens, output_tokens=output_tokens),
        )

    def _generated(
        self, draft: GeneratedDraft, evidence: Sequence[Evidence], sent: Sequence[EvidenceBlock]
    ) -> _Composed | None:
        by_id = {piece.evidence_id: piece for piece in evidence}
        if draft.unanswerable:
            return _Composed(AnswerOutcome.REFUSED, None, [], [], RefusalReason.INSUFFICIENT_EVIDENCE)
        validated = validated_draft(draft, evidence, sent)
        if validated.rejected_ids or validated.downgraded:
            logger.info(
                "draft claims rejected or downgraded",
                extra={"rejected_ids": validated.rejected_ids, "downgraded": validated.downgraded},
            )
        if not validated.supported:
            return None
        conflict = self._conflict(validated.claims, by_id)
        if conflict is not None:
            return conflict
        claims, citations = numbered_citations(validated.claims, by_id, retrieved_at=self._clock())
        return _Composed(
            AnswerOutcome.ANSWERED,
            AnswerMethod.GENERATED,
            claims,
            citations,
            assumptions=supported_assumptions(draft.assumptions, evidence),
            needs_review=draft.needs_review or bool(validated.downgraded),
            ambiguous=self._ambiguous(validated.claims, by_id),
        )

    @property
    def _reading(self) -> str:
        """How an answer reads the model's similarities (sentence floor, confidence range), for the cache key: a
        changed scale is another answer, as a changed retrieval setting is."""
        scale = self._embedder.similarity_scale
        ranking = self._ranking
        return f"sentence {ranking.sentence_floor} margin {ranking.margin}, top {scale.unrelated}-{scale.close}"

    def _extracted(self, tenant_id: str, question: str, evidence: Sequence[Evidence], vector: bool) -> _Composed:
        """The sentences worth quoting (shared/services/sentence_ranking.py) as claims, each citing its piece."""
        ranked = self._ranking.ranked(tenant_id, question, evidence, vector)
        if not ranked.chosen:
            return _Composed(
                AnswerOutcome.REFUSED,
                None,
                [],
                [],
                RefusalReason.INSUFFICIENT_EVIDENCE,
                lexical_coverage=ranked.lexical_coverage,
                transient=ranked.embedding_failed,
            )
        by_id = {piece.evidence_id: piece for piece in evidence}
        claims = [_quoted(sentence) for sentence, _ in ranked.chosen]
        # Checked against the best other sentences too: one quoted sentence must not hide a source that disagrees.
        quoted = {sentence for sentence, _ in ranked.chosen}
        compared = [*claims, *(_quoted(sentence) for sentence, _ in ranked.compared if sentence not in quoted)]
        conflict = self._conflict(compared, by_id)
        if conflict is not None:
            return conflict
        answer_claims, citations = numbered_citations(claims, by_id, retrieved_at=self._clock())
        return _Composed(
            AnswerOutcome.EVIDENCE_ONLY,
            AnswerMethod.EXTRACTIVE,
            answer_claims,
            citations,
            ambiguous=self._ambiguous(compared, by_id),
            lexical_coverage=ranked.lexical_coverage,
            transient=ranked.embedding_failed,
        )

    def _statements(self, claims: Sequence[ValidatedClaim], by_id: dict[str, Evidence]) -> list[Statement]:
        return [
            Statement(file_id=by_id[evidence_id].snapshot.file_id, evidence_id=evidence_id, text=claim.quote or "")
            for claim in claims
            for evidence_id in claim.evidence_ids[:1]
        ]

    def _conflict(self, claims: Sequence[ValidatedClaim], by_id: dict[str, Evidence]) -> _Composed | None:
        pairs = disagreements(self._statements(claims, by_id))
        if not pairs:
            return None
        # The refusal shows the disagreeing sources (no answer text): the reader compares them.
        involved = list(dict.fromkeys(evidence_id for pair in pairs for evidence_id in pair))
        sources = [
            ValidatedClaim(text="", evidence_ids=(evidence_id,), kind=ClaimKind.EXTRACTIVE, quote=None, rejected_ids=0)
            for evidence_id in involved
        ]
        _, citations = numbered_citations(sources, by_id, retrieved_at=self._clock())
        return _Composed(AnswerOutcome.REFUSED, None, [], citations, RefusalReason.CONFLICTING_EVIDENCE)

    def _ambiguous(self, claims: Sequence[ValidatedClaim], by_id: dict[str, Evidence]) -> bool:
        return bool(disagreements(self._statements(claims, by_id), threshold=AMBIGUOUS_SUBJECT))

    # --- refusals and the cache ---------------------------------------------------------------------------

    def _refused(
        self,
        principal: Principal,
        request: AnswerRequest,
        reason: RefusalReason,
        collections: frozenset[str],
        prompt_version: str,
        *,
        index_version: str | None = None,
        key: str | None = None,
        vector_available: bool | None = None,
    ) -> Answer:
        answer = Answer(
            answer_id=self._new_id(),
            question=request.question,
            outcome=AnswerOutcome.REFUSED,
            method=None,
            confidence=confidence(
                claims=[],
                citations=[],
                evidence=[],
                vector_available=True,
                ambiguous=False,
                extractive=False,
                lexical_coverage=0.0,
                scale=self._embedder.similarity_scale,
            ),
            refusal=Refusal.of(reason),
            vector_available=self._embedder.capability().available if vector_available is None else vector_available,
            prompt_version=prompt_version,
            index_version=index_version or self._store.index_version(principal.tenant_id, collections),
            created_at=self._clock(),
        )
        self._store.save(
            StoredAnswer(
                tenant_id=principal.tenant_id,
                subject=principal.subject,
                cache_key=key or f"uncached:{answer.answer_id}",
                collections=frozenset(),
                answer=answer,
            )
        )
        return answer

    def _served_from_cache(self, principal: Principal, hit: StoredAnswer, question: str) -> Answer:
        """The cached answer as a fresh one of the caller's (its own id, for feedback; the caller's own wording of
        the question), re-checked for access. The copy is stored, but never under the cache key: the cache serves
        what was computed, and its lifetime runs from the computation, not from the last time it was served."""
        answer = self._rechecked(principal, hit.answer).model_copy(
            update={"answer_id": self._new_id(), "created_at": self._clock(), "question": question}
        )
        self._store.save(
            StoredAnswer(
                tenant_id=principal.tenant_id,
                subject=principal.subject,
                cache_key=f"uncached:{answer.answer_id}",
                collections=frozenset(citation.citation.collection_id for citation in answer.citations),
                answer=answer,
            )
        )
        return answer.model_copy(update={"cached": True})

    def _rechecked(self, principal: Principal, answer: Answer) -> Answer:
        """A stored answer as the caller may see it now: citations of collections it can no longer read withheld
        (counted) with the claims that rest on them, and a refusal when nothing is left. A snapshot of a deleted
        source stays: it is what was read, and the answer stays auditable."""
        readable = self._authorization.readable_collections(principal)
        return answer_as_readable(answer, readable, frozenset(citation.chunk_id for citation in answer.citations))


def _quoted(sentence: Sentence) -> ValidatedClaim:
    """An extractive claim: the sentence verbatim, citing its piece."""
    return ValidatedClaim(
        text=sentence.text,
        evidence_ids=(sentence.evidence_id,),
        kind=ClaimKind.EXTRACTIVE,
        quote=sentence.text,
        rejected_ids=0,
    )
