"""The EmbeddingProvider on AWS, multilingual: Cohere Embed Multilingual v3 through Bedrock InvokeModel.

What Bedrock documents for it (user guide, "Cohere Embed v3", model-parameters-embed-v3; and "Cohere Embed models",
model-parameters-embed):

- the request is `{"texts": [...], "input_type": ..., "truncate": "NONE"|"START"|"END", "embedding_types": [...]}`;
  up to 96 texts a call, each up to 2,048 characters; "1 token is about 4 characters", 512 tokens recommended;
- `input_type` prepends special tokens: the corpus is embedded as `search_document`, questions as `search_query`;
- `truncate` NONE (the default) refuses an input past the model's token limit; START and END drop the excess;
- with `embedding_types: ["float"]` the answer's `embeddings` is keyed by type (`{"float": [[...], ...]}`), without
  it a plain list of vectors, one per text in order (both are read); the vectors have 1,024 dimensions;
- no streaming; Bedrock bills embedding models per input token (aws.amazon.com/bedrock/pricing).

Chunks go as `search_document` with `truncate` NONE: a chunk the model cannot read whole is refused, never cut
(the chunker sizes chunks within `max_tokens` by `count_tokens`, whose estimate keeps them far under 2,048
characters). Questions go as `search_query` with `truncate` END: a question of more tokens than the model reads is
searched by its beginning rather than not at all (its keyword lane reads all of it; questions are at most 2,000
characters, shared/domain/search.py). Calls, retries and their failures are embedding_calls.py's, as Titan's are.
"""

import random as _random
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

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
from shared.domain.errors import EmbeddingFailed
from shared.domain.similarity import MINILM_SCALE, SimilarityScale
from shared.domain.usage import Usage
from shared.ports import EmbeddingProvider

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
else:
    BedrockRuntimeClient = Any

COHERE_MULTILINGUAL_V3_MODEL_ID = "cohere.embed-multilingual-v3"
COHERE_V3_DIMENSION = 1024
COHERE_V3_TEXTS_PER_CALL = 96
COHERE_V3_MAX_CHARACTERS = 2048
COHERE_V3_MAX_TOKENS = 512
# Room for the special tokens `input_type` prepends and the sequence's own (Cohere does not publish how many).
_SPECIAL_TOKENS = 8

InputType = Literal["search_document", "search_query"]


class BedrockCohereEmbedder(EmbeddingProvider):
    """Cohere Embed Multilingual v3 vectors (1,024 dimensions, made unit length), up to 96 texts a call.

    `client` is a bedrock-runtime client, or a zero-argument factory for one called on the first `embed`. More
    than 96 texts are sent in calls of 96, up to `concurrency` at once, the vectors handed back in input order.
    `sleep` and `random` are injected so the back-off can be tested without waiting.
    """

    def __init__(
        self,
        client: "BedrockRuntimeClient | Callable[[], BedrockRuntimeClient]",
        *,
        dimension: int = COHERE_V3_DIMENSION,
        concurrency: int = 2,
        max_attempts: int = 6,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
    ) -> None:
        if dimension != COHERE_V3_DIMENSION:
            raise ValueError(
                f"Cohere Embed Multilingual v3 gives vectors of {COHERE_V3_DIMENSION} dimensions only, not"
                f" {dimension}: QUIRE_EMBEDDING_DIMENSION must be {COHERE_V3_DIMENSION} (and match the vector column)"
            )
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self._client: LazyClient[BedrockRuntimeClient] = LazyClient(client)
        self._concurrency = concurrency
        self._max_attempts = check_attempts(max_attempts)
        self._sleep = sleep
        self._backoff = Backoff(BACKOFF_BASE_SECONDS, BACKOFF_CAP_SECONDS, random)

    @classmethod
    def from_region(
        cls,
        region: str,
        *,
        dimension: int = COHERE_V3_DIMENSION,
        concurrency: int = 2,
        max_attempts: int = 6,
        connect_timeout: float = 5.0,
        read_timeout: float = 60.0,
    ) -> "BedrockCohereEmbedder":
        """An embedder whose client is built on first use, with botocore's retries off (this class retries)."""
        build_client: Callable[[], BedrockRuntimeClient] = bedrock_runtime_factory(
            region,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_pool_connections=max(10, concurrency),
        )
        return cls(build_client, dimension=dimension, concurrency=concurrency, max_attempts=max_attempts)

    @property
    def model_id(self) -> str:
        # Stored on every chunk: the model and its one dimension (the input types are fixed: documents and questions).
        return f"{COHERE_MULTILINGUAL_V3_MODEL_ID}@{COHERE_V3_DIMENSION}"

    @property
    def dimension(self) -> int:
        return COHERE_V3_DIMENSION

    @property
    def max_tokens(self) -> int:
        return COHERE_V3_MAX_TOKENS - _SPECIAL_TOKENS

    @property
    def languages(self) -> None:
        # Over 100 languages, for search across them (Bedrock's Cohere model card).
        return None

    @property
    def similarity_scale(self) -> SimilarityScale:
        # Not measured for Cohere yet: MiniLM's scale (docs/search.md).
        return MINILM_SCALE

    def capability(self) -> CapabilityStatus:
        # No probe call (it would cost money on every status check): a model whose access was never granted shows
        # up as CapabilityUnavailable on the first embed.
        return CapabilityStatus.ready(provider=f"bedrock:{self.model_id}")

    def usage(self, tokens: int) -> Usage:
        return invoke_model_usage(self.model_id, tokens)

    def count_tokens(self, text: str) -> int:
        """An upper estimate: Bedrock publishes no tokenizer for it (embedding_calls.upper_token_estimate)."""
        return upper_token_estimate(text)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, "search_document")

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self._embed(questions, "search_query")

    def _embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        if not texts:
            return []
        refuse_unreadable(texts, model_id=COHERE_MULTILINGUAL_V3_MODEL_ID, max_characters=COHERE_V3_MAX_CHARACTERS)
        client = self._client.get()
        calls = [
            partial(self._embed_batch, client, start, texts[start : start + COHERE_V3_TEXTS_PER_CALL], input_type)
            for start in range(0, len(texts), COHERE_V3_TEXTS_PER_CALL)
        ]
        batches = in_order(calls, concurrency=self._concurrency, thread_name_prefix="cohere-embed")
        return [vector for batch in batches for vector in batch]

    def _embed_batch(
        self,
        client: BedrockRuntimeClient,
        start: int,
        texts: Sequence[str],
        input_type: InputType,
        stop: threading.Event,
    ) -> list[list[float]]:
        what = f"text {start}" if len(texts) == 1 else f"texts {start} to {start + len(texts) - 1}"
        body: dict[str, object] = {
            "texts": list(texts),
            "input_type": input_type,
            "truncate": "END" if input_type == "search_query" else "NONE",
            "embedding_types": ["float"],
        }
        document = invoke_embedding_model(
            client,
            model_id=COHERE_MULTILINGUAL_V3_MODEL_ID,
            body=body,
            what=what,
            stop=stop,
            max_attempts=self._max_attempts,
            backoff=self._backoff,
            sleep=self._sleep,
        )
        embeddings = document.get("embeddings") if isinstance(document, dict) else None
        if isinstance(embeddings, dict):  # keyed by the embedding_types asked for
            embeddings = embeddings.get("float")
        if not isinstance(embeddings, list) or len(embeddings) != len(texts):
            count = len(embeddings) if isinstance(embeddings, list) else "no"
            raise EmbeddingFailed(
                f"{COHERE_MULTILINGUAL_V3_MODEL_ID} answered {what} with {count} float embeddings for"
                f" {len(texts)} texts"
            )
        return [
            unit_vector(
                raw, model_id=COHERE_MULTILINGUAL_V3_MODEL_ID, what=f"text {start + offset}", dimension=self.dimension
            )
            for offset, raw in enumerate(embeddings)
        ]
