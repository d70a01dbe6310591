"""Which of the evidence's sentences an evidence-only answer quotes (docs/answers.md#evidence-only-answers).

Sentences are ranked by the embedding model's cosine to the question; by the question's words where there is no
embedding; and where the model does not read the question's language (an English model places a German sentence by
its characters: docs/adr/0011), by words, a sentence that shares a word and whose cosine reaches the model's floor
counting as related (the lexical floor added). Words are compared without English's and the question's language's
stopwords. Vectors come through the sentence vector cache (shared/services/sentence_vectors.py).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

from shared.domain.answers import Evidence
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed
from shared.domain.grounding import (
    RETRIEVAL_WEIGHT,
    SENTENCE_MARGIN,
    Sentence,
    answering_sentences,
    cosine,
    extractive_choice,
    in_retrieval_order,
    lexical_similarity,
    ranked_sentences,
    sentences_of,
    sentences_to_rank,
)
from shared.observability import logger
from shared.ports import EmbeddingProvider
from shared.services.retrieval import Retrieval
from shared.services.sentence_vectors import SentenceVectors


@dataclass(frozen=True)
class RankedSentences:
    """The sentences chosen to quote with their similarity (best first; none: nothing answers), the best share of
    the question's words any piece of evidence holds, whether the embedder failed (the ranking fell back to words,
    so the answer is not cached), and the sentences the answer is checked against for conflicts."""

    chosen: list[tuple[Sentence, float]]
    lexical_coverage: float
    embedding_failed: bool
    # The best sentences the floor lets through (up to three, at most two of a piece: what was quoted before issue
    # 37): an answer is checked against them for conflicting figures.
    compared: list[tuple[Sentence, float]] = field(default_factory=list)


class SentenceRanking:
    def __init__(
        self,
        *,
        retrieval: Retrieval,
        embedder: EmbeddingProvider,
        sentence_vectors: SentenceVectors,
        sentence_floor: float | None,
        lexical_floor: float,
        sentence_margin: float = SENTENCE_MARGIN,
    ) -> None:
        self._retrieval = retrieval
        self._embedder = embedder
        self._sentence_vectors = sentence_vectors
        self._tuned_floor = sentence_floor
        self._lexical_floor = lexical_floor
        self._margin = sentence_margin

    @property
    def sentence_floor(self) -> float:
        """The cosine a sentence must reach to be quoted: the tuning's when set, else the embedding model's own."""
        chosen = self._tuned_floor
        return chosen if chosen is not None else self._embedder.similarity_scale.sentence

    @property
    def margin(self) -> float:
        """How close to the answering sentence (cosine) a further one must be to be quoted too."""
        return self._margin

    def ranked(self, tenant_id: str, question: str, evidence: Sequence[Evidence], vector: bool) -> RankedSentences:
        order = {piece.evidence_id: position for position, piece in enumerate(evidence)}
        language = self._retrieval.question_language(question)
        embedding = vector and self._embedder.capability().available
        sentences = sentences_to_rank(
            question,
            [sentence for piece in evidence for sentence in sentences_of(piece)],
            order,
            language=language,
            # What is embedded is bounded in word pieces too; ranked by words, nothing is embedded.
            cost=self._embedder.count_tokens if embedding else None,
        )
        words = [lexical_similarity(question, sentence.text, language) for sentence in sentences]
        similarity = words
        floor = self._lexical_floor
        embedding_failed = False
        if embedding and sentences:
            model_floor = self.sentence_floor
            reads = self._retrieval.embedder_reads_language(language)  # detected once
            # Where the model does not read the language, a cosine only adds to shared words: a sentence sharing
            # none is not embedded (its similarity is 0 whatever the model says).
            embedded = [index for index, share in enumerate(words) if reads or share > 0]
            try:
                related = dict(zip(embedded, self._cosines(tenant_id, question, sentences, embedded), strict=True))
                if reads:
                    similarity, floor = [related[index] for index in range(len(sentences))], model_floor
                else:
                    similarity = [
                        share + (floor if share > 0 and related[index] >= model_floor else 0.0)
                        for index, share in enumerate(words)
                    ]
            except (CapabilityUnavailable, EmbeddingFailed) as error:
                logger.warning("sentences could not be embedded; ranked by words", extra={"error": str(error)})
                embedding_failed = True
        # Every distinct sentence at or above the floor, then the fewest that answer (none: they do not).
        pieces = {piece.evidence_id: piece for piece in evidence}
        above = [item for item in ranked_sentences(sentences, similarity, order) if item[1] >= floor]
        ordered = in_retrieval_order(above, pieces, RETRIEVAL_WEIGHT)
        candidates = extractive_choice(ordered, count=len(ordered), floor=floor, per_piece=len(ordered))
        chosen = answering_sentences(question, language, candidates, pieces, margin=self._margin)
        coverage = max((lexical_similarity(question, piece.text, language) for piece in evidence), default=0.0)
        compared = extractive_choice(ordered, floor=floor) if chosen else []
        return RankedSentences(chosen, coverage, embedding_failed, compared)

    def _cosines(
        self, tenant_id: str, question: str, sentences: Sequence[Sentence], embedded: Sequence[int]
    ) -> list[float]:
        """The question's cosine to each sentence of `embedded` (indexes), the vectors through the sentence vector
        cache; nothing is embedded when there is none."""
        if not embedded:
            return []
        asked = self._sentence_vectors.question(tenant_id, self._embedder, question)
        vectors = self._sentence_vectors.sentences(tenant_id, self._embedder, [sentences[i].text for i in embedded])
        return [cosine(asked, vector) for vector in vectors]
