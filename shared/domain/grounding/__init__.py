"""Grounding: from ranked hits to a cited answer, deterministically (docs/answers.md).

Every step is a pure function of its inputs, so the same index and question give the same answer byte for byte.
Nothing a model wrote about places is kept: its claims name evidence ids, and names, pages and locations come
from the stored snapshots those ids stand for. One module per step; every public name is re-exported here.
"""

from shared.domain.grounding.citations import answer_as_readable, answer_hits, numbered_citations, withheld_citations
from shared.domain.grounding.confidence_score import (
    HIGH_BAND,
    MEDIUM_BAND,
    confidence,
    confidence_of,
    top_retrieval,
)
from shared.domain.grounding.conflicts import AMBIGUOUS_SUBJECT, SAME_SUBJECT, Statement, disagreements
from shared.domain.grounding.evidence import (
    EVIDENCE_BUDGET_CHARACTERS,
    MAX_EVIDENCE,
    MAX_EVIDENCE_BLOCKS,
    NEAR_DUPLICATE,
    NEIGHBOUR_OVERLAP,
    deduplicated,
    evidence_blocks,
    piece_of,
    quoted_regions,
    selected,
)
from shared.domain.grounding.extractive import (
    EXTRACTIVE_SENTENCES,
    LEADING_PIECES,
    MAX_RANKED_SENTENCES,
    MAX_SENTENCES_PER_EVIDENCE,
    MIN_SENTENCE_CHARACTERS,
    Sentence,
    cosine,
    extractive_choice,
    lexical_similarity,
    ranked_sentences,
    sentences_of,
    sentences_to_rank,
)
from shared.domain.grounding.question import cache_key, normalised_question, out_of_scope
from shared.domain.grounding.validation import (
    MIN_CLAIM_OVERLAP,
    MIN_QUOTE_WORDS,
    ValidatedClaim,
    ValidatedDraft,
    supported_assumptions,
    validated_claim,
    validated_draft,
)

__all__ = [
    "AMBIGUOUS_SUBJECT",
    "EVIDENCE_BUDGET_CHARACTERS",
    "EXTRACTIVE_SENTENCES",
    "HIGH_BAND",
    "LEADING_PIECES",
    "MAX_EVIDENCE",
    "MAX_EVIDENCE_BLOCKS",
    "MAX_RANKED_SENTENCES",
    "MAX_SENTENCES_PER_EVIDENCE",
    "MEDIUM_BAND",
    "MIN_CLAIM_OVERLAP",
    "MIN_QUOTE_WORDS",
    "MIN_SENTENCE_CHARACTERS",
    "NEAR_DUPLICATE",
    "NEIGHBOUR_OVERLAP",
    "SAME_SUBJECT",
    "Sentence",
    "Statement",
    "ValidatedClaim",
    "ValidatedDraft",
    "answer_as_readable",
    "answer_hits",
    "cache_key",
    "confidence",
    "confidence_of",
    "cosine",
    "deduplicated",
    "disagreements",
    "evidence_blocks",
    "extractive_choice",
    "lexical_similarity",
    "normalised_question",
    "numbered_citations",
    "out_of_scope",
    "piece_of",
    "quoted_regions",
    "ranked_sentences",
    "selected",
    "sentences_of",
    "sentences_to_rank",
    "supported_assumptions",
    "top_retrieval",
    "validated_claim",
    "validated_draft",
    "withheld_citations",
]
