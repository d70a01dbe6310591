"""The question: whether answers take it at all, and the cache key it is answered under."""

import hashlib
import json
import re
import unicodedata
from typing import Any

from shared.domain.search import SearchFilters


def normalised_question(text: str) -> str:
    """The question as the cache compares it: NFKC, case-folded, white space collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


# Requests that are not questions about the documents, in the form an instruction takes: to drop the rules, to
# reveal the assistant's own prompt, to reach other tenants, or to change stored data (an imperative first word).
# Deterministic and narrow on purpose: "How do I delete old files?" or "What does the runbook say about the system
# prompt?" are questions for the documents; retrieval's floors and the model's "unanswerable" handle the rest.
_TENANT_DATA = r"(?:data|documents?|files?|collections?|content|answers?|records?|uploads?|information|chunks?)\b"
_OUT_OF_SCOPE = tuple(
    re.compile(pattern, re.I)
    for pattern in (
        r"^\W*(?:please\s+)?(?:ignore|disregard|forget|override)\b.{0,60}\b(?:instructions?|rules|prompts?|guidelines)\b",
        r"\b(?:your|the hidden|the initial|the original)\s+(?:system\s+)?(?:prompt|instructions|rules)\b",
        r"\byour\s+system\s+prompt\b",
        r"\b(?:instructions|prompt|rules)\s+(?:that\s+)?you\s+(?:were|are|have\s+been)\s+given\b",
        r"^\W*(?:please\s+)?(?:reveal|print|repeat|disclose|show|output)\b.{0,20}\bsystem\s+prompt\b",
        # Another tenant's data, not a lease's tenants ("What must every tenant do before moving out?").
        rf"\b(?:other|another|all|every|different)\s+tenants?(?:'s|')?\s+(?:\w+\s+){{0,2}}?{_TENANT_DATA}",
        rf"\b{_TENANT_DATA}\s+(?:of|from|for|belonging\s+to|owned\s+by)\s+(?:other|another|all|every|different)\s+tenants?\b",
        # An instruction with an object ("delete all files"), not a noun ("Drop-off times?", "Upload limits?").
        r"^\W*(?:please\s+)?(?:delete|erase|drop|overwrite|rename|upload|remove|wipe)\s+(?:all|every|each|the|this|"
        r"these|those|my|our|any)\b",
    )
)


def out_of_scope(question: str) -> bool:
    """Whether the question asks for something answers never give (see _OUT_OF_SCOPE)."""
    text = " ".join(question.split())
    return any(pattern.search(text) for pattern in _OUT_OF_SCOPE)


def cache_key(
    *,
    tenant_id: str,
    collections: frozenset[str],
    question: str,
    filters: SearchFilters,
    mode: str,
    index_version: str,
    retrieval_settings: str,
    prompt_version: str,
    model: str,
) -> str:
    """The cache key: tenant, readable collections, normalised question, filter hash, index version derived from
    indexed state, retrieval settings, prompt version and model. Any change to any of them is another key."""
    parts = {
        "tenant": tenant_id,
        "collections": sorted(collections),
        "question": normalised_question(question),
        "filters": _canonical_filters(filters),
        "mode": mode,
        "index": index_version,
        "retrieval": retrieval_settings,
        "prompt": prompt_version,
        "model": model,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _canonical_filters(filters: SearchFilters) -> dict[str, Any]:
    """The filters with their sets sorted: a set's JSON follows its hash order, which changes per process, and the
    same filter must give the same key in every Lambda instance."""
    dumped = filters.model_dump(mode="json")
    return {name: sorted(value) if isinstance(value, list) else value for name, value in dumped.items()}
