"""The vectors an extractive answer ranks sentences by, kept for the next answer that quotes the same sentence.

An evidence-only answer embeds the question and up to MAX_RANKED_SENTENCES sentences of its evidence (most of its
time, docs/benchmarks.md#answers). Questions about one topic meet the same passages, so most of a warm answer's
sentences were embedded by an earlier one. The cache is per answer service (a warm Lambda's; the local stack's API
and MCP server have one each), bounded in entries and in bytes, least recently used out first.

A key is the tenant, the model id and the sha256 of the text (docs/answers.md#sentence-vectors). The vector of a
text is a function of the model and the text alone, so sharing it across tenants would give no tenant a vector it
could not compute itself; but a hit is faster than a miss, and an answer's time would tell a tenant that another
tenant's answer quoted a sentence it guessed. The tenant in the key closes that channel; two tenants that hold the
same text pay for it once each.
"""

import hashlib
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence

from shared.ports import EmbeddingProvider

MAX_CACHED_VECTORS = 20_000
MAX_CACHED_BYTES = 64 * 1024 * 1024
# What one entry costs besides its vector: the key's tuple and strings, the OrderedDict's node, the array's header.
ENTRY_OVERHEAD_BYTES = 400
_QUESTION = "question"
_SENTENCE = "sentence"


class SentenceVectors:
    """Vectors of sentences (and questions) by (tenant, model id, kind, sha256 of the text); the misses embedded in
    one call. Thread-safe: the API serves answers from several threads."""

    def __init__(self, *, max_entries: int = MAX_CACHED_VECTORS, max_bytes: int = MAX_CACHED_BYTES) -> None:
        if max_entries < 0 or max_bytes < 0:
            raise ValueError("the sentence vector cache's bounds cannot be negative")
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str, str, str], array[float]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def question(self, tenant_id: str, embedder: EmbeddingProvider, question: str) -> list[float]:
        """The question's vector as the model embeds a query (`embed_queries`)."""
        return self._vectors(tenant_id, embedder, _QUESTION, [question], embedder.embed_queries)[0]

    def sentences(self, tenant_id: str, embedder: EmbeddingProvider, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order: the cached ones, and the rest embedded in one call (`embed`)."""
        return self._vectors(tenant_id, embedder, _SENTENCE, texts, embedder.embed)

    def _vectors(
        self,
        tenant_id: str,
        embedder: EmbeddingProvider,
        kind: str,
        texts: Sequence[str],
        embed: Callable[[Sequence[str]], list[list[float]]],
    ) -> list[list[float]]:
        model = embedder.model_id
        keys = [(tenant_id, model, kind, hashlib.sha256(text.encode("utf-8")).hexdigest()) for text in texts]
        found: dict[int, list[float]] = {}
        with self._lock:
            for index, key in enumerate(keys):
                cached = self._entries.get(key)
                if cached is not None:
                    self._entries.move_to_end(key)
                    found[index] = cached.tolist()
            missing = [index for index in range(len(texts)) if index not in found]
            # A text that occurs twice in one call is embedded once.
            unique = list(dict.fromkeys(keys[index] for index in missing))
            self.hits += len(texts) - len(missing)
            self.misses += len(unique)
        if unique:
            first = {key: index for index, key in reversed(list(enumerate(keys)))}
            embedded = embed([texts[first[key]] for key in unique])
            fresh = dict(zip(unique, embedded, strict=True))
            for index in missing:
                found[index] = list(fresh[keys[index]])
            with self._lock:
                for key, vector in fresh.items():
                    self._stored(key, array("d", vector))
        return [found[index] for index in range(len(texts))]

    def _stored(self, key: tuple[str, str, str, str], vector: "array[float]") -> None:
        size = vector.itemsize * len(vector) + ENTRY_OVERHEAD_BYTES
        if size > self._max_bytes or self._max_entries == 0:
            return
        previous = self._entries.pop(key, None)
        if previous is not None:
            self._bytes -= previous.itemsize * len(previous) + ENTRY_OVERHEAD_BYTES
        self._entries[key] = vector
        self._bytes += size
        while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._bytes -= evicted.itemsize * len(evicted) + ENTRY_OVERHEAD_BYTES
