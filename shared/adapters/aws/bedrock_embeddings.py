"""The EmbeddingProvider on AWS: Amazon Titan Text Embeddings V2 through Bedrock InvokeModel.

Titan takes one text per call (there is no synchronous batch API), so `embed` runs up to `concurrency` calls at
once and hands the vectors back in input order. Each call is retried under the model adapters' policy (converse.py's
tables, full-jitter back-off; botocore's own retries off), as embedding_calls.py runs it for both Bedrock
embedding adapters. Shapes and limits: the Bedrock user guide's Titan Text Embeddings V2 pages
(model-parameters-titan-embed-text).
"""

import random as _random
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from shared.adapters.aws.embedding_calls import (
    BACKOFF_BASE_SECONDS,
    BACKOFF_CAP_SECONDS,
    in_order,
    invoke_embedding_model,
    invoke_model_usage,
    refuse_unreadable,
    unit_vector,
    upper_token_estimate,
)
from shared.adapters.aws.retrying import Backoff, LazyClient, bedrock_runtime_factory, check_attempts
from shared.domain.capabilities import CapabilityStatus
from shared.domain.similarity import MINILM_SCALE, SimilarityScale
from shared.domain.usage import Usage
from shared.ports import EmbeddingProvider

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
else:
    BedrockRuntimeClient = Any

TITAN_V2_MODEL_ID = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMENSIONS = (256, 512, 1024)
TITAN_V2_MAX_TOKENS = 8192
TITAN_V2_MAX_CHARACTERS = 50_000


class BedrockTitanEmbedder(EmbeddingProvider):
    """Titan Text Embeddings V2 vectors of `dimension` (256, 512 or 1024), unit length, one call per text.

    `client` is a bedrock-runtime client, or a zero-argument factory for one that is called on the first
    `embed` (a function that never embeds never builds a client). boto3 clients are thread-safe; the
    client's connection pool should hold at least `concurrency` connections.

    `sleep` and `random` are injected so the back-off can be tested without waiting.
    """

    def __init__(
        self,
        client: "BedrockRuntimeClient | Callable[[], BedrockRuntimeClient]",
        *,
        dimension: int,
        model_id: str = TITAN_V2_MODEL_ID,
        concurrency: int = 4,
        max_attempts: int = 6,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        if dimension not in TITAN_V2_DIMENSIONS:
            allowed = ", ".join(str(d) for d in TITAN_V2_DIMENSIONS)
            raise ValueError(
                f"Titan Text Embeddings V2 gives vectors of {allowed} dimensions, not {dimension}:"
                f" QUIRE_EMBEDDING_DIMENSION must be one of {allowed} (and match the vector column)"
            )
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self._client: LazyClient[BedrockRuntimeClient] = LazyClient(client)
        self._dimension = dimension
        self._base_model_id = model_id
        self._concurrency = concurrency
        self._max_attempts = check_attempts(max_attempts)
        self._sleep = sleep
        self._backoff = Backoff(BACKOFF_BASE_SECONDS, BACKOFF_CAP_SECONDS, random)

    @classmethod
    def from_region(
        cls,
        region: str,
        *,
        dimension: int,
        model_id: str = TITAN_V2_MODEL_ID,
        concurrency: int = 4,
        max_attempts: int = 6,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
    ) -> "BedrockTitanEmbedder":
        """An embedder whose client is built on first use, with botocore's retries off (this class retries)."""

        build_client: Callable[[], BedrockRuntimeClient] = bedrock_runtime_factory(
            region,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_pool_connections=max(10, concurrency),
        )

        return cls(
            build_client, dimension=dimension, model_id=model_id, concurrency=concurrency, max_attempts=max_attempts
        )

    @property
    def model_id(self) -> str:
        # Stored on every chunk: a change of model or of dimension makes the stored vectors stale.
        return f"{self._base_model_id}@{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def max_tokens(self) -> int:
        return TITAN_V2_MAX_TOKENS

    @property
    def languages(self) -> None:
        # Titan Text Embeddings v2 is multilingual (over 100 languages in pre-training; AWS's model card).
        return None

    @property
    def similarity_scale(self) -> SimilarityScale:
        # Not measured for Titan yet: MiniLM's scale, as before it was a property of the model (docs/search.md).
        return MINILM_SCALE

    def capability(self) -> CapabilityStatus:
        # Deliberately no probe call (it would cost money on every status check): a model whose access was
        # never granted shows up as CapabilityUnavailable on the first embed.
        return CapabilityStatus.ready(provider=f"bedrock:{self.model_id}")

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self.embed(questions)  # a question is read as any text

    def usage(self, tokens: int) -> Usage:
        return invoke_model_usage(self.model_id, tokens)

    def count_tokens(self, text: str) -> int:
        """An upper estimate: Titan publishes no tokenizer (embedding_calls.upper_token_estimate says how)."""
        return upper_token_estimate(text)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        refuse_unreadable(texts, model_id=self._base_model_id, max_characters=TITAN_V2_MAX_CHARACTERS)
        client = self._client.get()
        calls = [partial(self._embed_one, client, index, text) for index, text in enumerate(texts)]
        return in_order(calls, concurrency=self._concurrency, thread_name_prefix="titan-embed")

    def _embed_one(self, client: BedrockRuntimeClient, index: int, text: str, stop: threading.Event) -> list[float]:
        what = f"text {index}"
        body: dict[str, object] = {
            "inputText": text,
            "dimensions": self._dimension,
            "normalize": True,
            "embeddingTypes": ["float"],
        }
        document = invoke_embedding_model(
            client,
            model_id=self._base_model_id,
            body=body,
            what=what,
            stop=stop,
            max_attempts=self._max_attempts,
            backoff=self._backoff,
            sleep=self._sleep,
        )
        raw: object = None
        if isinstance(document, dict):
            raw = document.get("embedding")
            by_type = document.get("embeddingsByType")
            if raw is None and isinstance(by_type, dict):
                raw = by_type.get("float")
        return unit_vector(raw, model_id=self._base_model_id, what=what, dimension=self._dimension)
