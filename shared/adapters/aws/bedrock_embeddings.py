"""The EmbeddingProvider on AWS: Amazon Titan Text Embeddings V2 through Bedrock InvokeModel.

Titan takes one text per call (there is no synchronous batch API), so `embed` runs up to `concurrency` calls at
once and hands the vectors back in input order. Each call is retried under the model adapters' policy (converse.py's
tables, full-jitter back-off; botocore's own retries off). Shapes and limits: the Bedrock user guide's Titan
Text Embeddings V2 pages (model-parameters-titan-embed-text).
"""

import json
import logging
import math
import random as _random
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError, ResponseStreamingError

from shared.adapters.aws.converse import NOT_ENABLED_CODES, RETRYABLE_CODES, model_not_enabled
from shared.adapters.aws.retrying import (
    RETRYABLE_TRANSPORT,
    Backoff,
    LazyClient,
    bedrock_runtime_factory,
    check_attempts,
    error_code,
    error_message,
    retried,
)
from shared.domain.capabilities import Capability, CapabilityStatus
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed
from shared.domain.usage import Usage
from shared.ports import EmbeddingProvider

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
else:
    BedrockRuntimeClient = Any

TITAN_V2_MODEL_ID = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMENSIONS = (256, 512, 1024)
TITAN_V2_MAX_TOKENS = 8192
TITAN_V2_MAX_CHARACTERS = 50_000

BACKOFF_BASE_SECONDS = 0.2
BACKOFF_CAP_SECONDS = 10.0
_UNIT_TOLERANCE = 1e-3

# Transport failures: no answer at all (connect), or none in time (read), or a body cut short.
_RETRYABLE_TRANSPORT: tuple[type[Exception], ...] = (*RETRYABLE_TRANSPORT, ResponseStreamingError)
_CALL_FAILURES: tuple[type[Exception], ...] = (ClientError, *_RETRYABLE_TRANSPORT)

# A word or other letter run, a single digit, or a single punctuation mark: each costs at least one token
# in any subword tokenizer (many split numbers digit by digit).
_TOKEN_PIECES = re.compile(r"[^\W\d]+|\d|[^\w\s]")


class _Cancelled(Exception):
    """Another text of the same batch already failed; this one stops without calling again."""


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

    def capability(self) -> CapabilityStatus:
        # Deliberately no probe call (it would cost money on every status check): a model whose access was
        # never granted shows up as CapabilityUnavailable on the first embed.
        return CapabilityStatus.ready(provider=f"bedrock:{self.model_id}")

    def embed_queries(self, questions: Sequence[str]) -> list[list[float]]:
        return self.embed(questions)  # a question is read as any text

    def usage(self, tokens: int) -> Usage:
        # Titan bills input tokens; `tokens` is this adapter's upper estimate of them (see count_tokens).
        return Usage(
            provider="bedrock", operation="bedrock:InvokeModel", model=self.model_id, priced=True, input_tokens=tokens
        )

    def count_tokens(self, text: str) -> int:
        """An upper estimate: Titan publishes no tokenizer.

        AWS gives 4.7 characters per token on average for English; a third of the UTF-8 bytes allows
        ~1.5x headroom for technical text (identifiers, URLs). Text dense in digits and punctuation can
        cost more than that, so the estimate is never below one token per word, digit and punctuation
        mark either. Both terms only grow as text is appended, so the estimate is monotone.
        """
        by_bytes = math.ceil(len(text.encode("utf-8")) / 3)
        by_pieces = len(_TOKEN_PIECES.findall(text))
        return max(by_bytes, by_pieces)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        for index, text in enumerate(texts):
            if not text:
                raise EmbeddingFailed(f"text {index} is empty: {self._base_model_id} embeds only non-empty text")
            if len(text) > TITAN_V2_MAX_CHARACTERS:
                raise EmbeddingFailed(
                    f"text {index} has {len(text):,} characters: {self._base_model_id} reads at most"
                    f" {TITAN_V2_MAX_CHARACTERS:,}"
                )
        client = self._client.get()
        if self._concurrency == 1 or len(texts) == 1:
            never = threading.Event()
            return [self._embed_one(client, index, text, never) for index, text in enumerate(texts)]
        return self._embed_concurrently(client, texts)

    def _embed_concurrently(self, client: BedrockRuntimeClient, texts: Sequence[str]) -> list[list[float]]:
        stop = threading.Event()
        with ThreadPoolExecutor(
            max_workers=min(self._concurrency, len(texts)), thread_name_prefix="titan-embed"
        ) as pool:
            futures = [pool.submit(self._embed_one, client, index, text, stop) for index, text in enumerate(texts)]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [future for future in futures if future in done and future.exception() is not None]
            if failed:
                # Stop queued texts from starting and in-flight ones from retrying, then report the first
                # real failure in input order (a _Cancelled is only the echo of another one).
                stop.set()
                for future in futures:
                    future.cancel()
                wait(futures)
                raise _first_failure(futures)
            return [future.result() for future in futures]

    def _request_body(self, text: str) -> bytes:
        body = {"inputText": text, "dimensions": self._dimension, "normalize": True, "embeddingTypes": ["float"]}
        return json.dumps(body).encode("utf-8")

    def _embed_one(self, client: BedrockRuntimeClient, index: int, text: str, stop: threading.Event) -> list[float]:
        body = self._request_body(text)

        def invoke() -> bytes:
            if stop.is_set():
                raise _Cancelled
            response = client.invoke_model(
                modelId=self._base_model_id, body=body, contentType="application/json", accept="application/json"
            )
            return response["body"].read()

        def refuse(error: ClientError) -> None:
            code, message = error_code(error), error_message(error)
            if code in NOT_ENABLED_CODES:
                # The reason reaches API callers (a search's 503, a version's embedding gap).
                reason = model_not_enabled(
                    client.meta.region_name, code, message, role="embedding", model_id=self._base_model_id
                )
                raise CapabilityUnavailable(Capability.EMBEDDER.value, reason) from error
            if code not in RETRYABLE_CODES:
                # ValidationException (too long, empty), ModelErrorException, ServiceQuotaExceededException…
                _log.warning("Bedrock refused text %d: %s: %s", index, code, message)
                raise EmbeddingFailed(f"{self._base_model_id} refused text {index} ({code or 'error'})") from error

        try:
            payload = retried(
                invoke,
                max_attempts=self._max_attempts,
                retryable_codes=RETRYABLE_CODES,
                backoff=self._backoff,
                sleep=self._sleep,
                refuse=refuse,
                transport=_RETRYABLE_TRANSPORT,
            )
        except _CALL_FAILURES as error:  # still failing on the last attempt
            last_error = error_code(error) if isinstance(error, ClientError) else type(error).__name__
            raise EmbeddingFailed(
                f"{self._base_model_id} throttled/unavailable after {self._max_attempts} attempts at text {index}"
                f" (last error: {last_error})"
            ) from error
        return self._vector(index, payload)

    def _vector(self, index: int, payload: bytes) -> list[float]:
        try:
            document = json.loads(payload)
        except ValueError as error:
            raise EmbeddingFailed(
                f"{self._base_model_id} answered text {index} with a body that is not JSON"
            ) from error
        raw: object = None
        if isinstance(document, dict):
            raw = document.get("embedding")
            by_type = document.get("embeddingsByType")
            if raw is None and isinstance(by_type, dict):
                raw = by_type.get("float")
        if not isinstance(raw, list) or not all(
            isinstance(value, int | float) and not isinstance(value, bool) for value in raw
        ):
            raise EmbeddingFailed(f"{self._base_model_id} answered text {index} without a float embedding")
        if len(raw) != self._dimension:
            raise EmbeddingFailed(
                f"{self._base_model_id} answered text {index} with {len(raw)} dimensions where {self._dimension}"
                " were asked"
            )
        vector = [float(value) for value in raw]
        norm = math.sqrt(math.fsum(value * value for value in vector))
        if not math.isfinite(norm) or norm == 0.0:
            raise EmbeddingFailed(f"{self._base_model_id} answered text {index} with a vector that cannot be unit")
        if abs(norm - 1.0) > _UNIT_TOLERANCE:
            vector = [value / norm for value in vector]
        return vector


def _first_failure(futures: Sequence[Future[list[float]]]) -> BaseException:
    errors = [
        error
        for future in futures
        if not future.cancelled() and (error := future.exception()) is not None and not isinstance(error, _Cancelled)
    ]
    return errors[0] if errors else EmbeddingFailed("embedding was cancelled")
