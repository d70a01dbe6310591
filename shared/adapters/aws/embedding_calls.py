"""What the Bedrock embedding adapters (Titan, Cohere) share: one InvokeModel call under the model adapters' retry
policy with its failures told as the port's errors, a returned vector checked and made unit length, calls run a few
at a time with the results in input order, and the token estimate for models that publish no tokenizer.

Each adapter keeps its request body, its reading of the answer and its limits; `what` names the input a call carried
("text 3", "texts 96 to 191") in every failure, so a refusal points at the text the caller sent.
"""

import json
import logging
import math
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, TypeVar

from botocore.exceptions import ClientError, ResponseStreamingError

from shared.adapters.aws.converse import NOT_ENABLED_CODES, RETRYABLE_CODES, model_not_enabled
from shared.adapters.aws.retrying import RETRYABLE_TRANSPORT, Backoff, error_code, error_message, retried
from shared.domain.capabilities import Capability
from shared.domain.errors import CapabilityUnavailable, EmbeddingFailed
from shared.domain.usage import Usage

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
else:
    BedrockRuntimeClient = Any

Result = TypeVar("Result")

BACKOFF_BASE_SECONDS = 0.2
BACKOFF_CAP_SECONDS = 10.0
_UNIT_TOLERANCE = 1e-3

# Transport failures: no answer at all (connect), or none in time (read), or a body cut short.
_RETRYABLE_TRANSPORT: tuple[type[Exception], ...] = (*RETRYABLE_TRANSPORT, ResponseStreamingError)
_CALL_FAILURES: tuple[type[Exception], ...] = (ClientError, *_RETRYABLE_TRANSPORT)

# A word or other letter run, a single digit, or a single punctuation mark: each costs at least one token
# in any subword tokenizer (many split numbers digit by digit).
_TOKEN_PIECES = re.compile(r"[^\W\d]+|\d|[^\w\s]")


class Cancelled(Exception):
    """Another call of the same batch already failed; this one stops without calling again."""


def upper_token_estimate(text: str) -> int:
    """An upper estimate of the tokens `text` costs a Bedrock embedding model that publishes no tokenizer.

    AWS gives 4.7 characters per token on average for English (Titan) and "about 4" (Cohere); a third of the UTF-8
    bytes allows ~1.5x headroom for technical text (identifiers, URLs). Text dense in digits and punctuation can
    cost more than that, so the estimate is never below one token per word, digit and punctuation mark either.
    Both terms only grow as text is appended, so the estimate is monotone.
    """
    by_bytes = math.ceil(len(text.encode("utf-8")) / 3)
    by_pieces = len(_TOKEN_PIECES.findall(text))
    return max(by_bytes, by_pieces)


def invoke_model_usage(model: str, tokens: int) -> Usage:
    """An embedding model's InvokeModel calls: Bedrock bills embedding models per input token; `tokens` is the
    adapter's upper estimate of them (`upper_token_estimate`)."""
    return Usage(provider="bedrock", operation="bedrock:InvokeModel", model=model, priced=True, input_tokens=tokens)


def refuse_unreadable(texts: Sequence[str], *, model_id: str, max_characters: int, first_index: int = 0) -> None:
    """EmbeddingFailed for an empty text or one over the model's character limit, before any call: a text is
    never cut to fit (the chunker sizes chunks in the model's tokens, so a chunk never reaches the limit)."""
    for index, text in enumerate(texts, start=first_index):
        if not text:
            raise EmbeddingFailed(f"text {index} is empty: {model_id} embeds only non-empty text")
        if len(text) > max_characters:
            raise EmbeddingFailed(
                f"text {index} has {len(text):,} characters: {model_id} reads at most {max_characters:,}"
            )


def invoke_embedding_model(
    client: BedrockRuntimeClient,
    *,
    model_id: str,
    body: dict[str, object],
    what: str,
    stop: threading.Event,
    max_attempts: int,
    backoff: Backoff,
    sleep: Callable[[float], None],
) -> Any:
    """The parsed JSON answer to one InvokeModel call of `body`, retried while the model is busy.

    Raises CapabilityUnavailable when the model is not enabled for this account and region (the reason reaches
    API callers; the fix is logged for the operator), EmbeddingFailed when the model refuses the input, stays busy
    past `max_attempts`, or answers something that is not JSON; Cancelled when `stop` is set before a call.
    """
    payload = json.dumps(body).encode("utf-8")

    def invoke() -> bytes:
        if stop.is_set():
            raise Cancelled
        response = client.invoke_model(
            modelId=model_id, body=payload, contentType="application/json", accept="application/json"
        )
        return response["body"].read()

    def refuse(error: ClientError) -> None:
        code, message = error_code(error), error_message(error)
        if code in NOT_ENABLED_CODES:
            reason = model_not_enabled(client.meta.region_name, code, message, role="embedding", model_id=model_id)
            raise CapabilityUnavailable(Capability.EMBEDDER.value, reason) from error
        if code not in RETRYABLE_CODES:
            # ValidationException (too long, empty), ModelErrorException, ServiceQuotaExceededException…
            _log.warning("Bedrock refused %s: %s: %s", what, code, message)
            raise EmbeddingFailed(f"{model_id} refused {what} ({code or 'error'})") from error

    try:
        answer = retried(
            invoke,
            max_attempts=max_attempts,
            retryable_codes=RETRYABLE_CODES,
            backoff=backoff,
            sleep=sleep,
            refuse=refuse,
            transport=_RETRYABLE_TRANSPORT,
        )
    except _CALL_FAILURES as error:  # still failing on the last attempt
        last_error = error_code(error) if isinstance(error, ClientError) else type(error).__name__
        raise EmbeddingFailed(
            f"{model_id} throttled/unavailable after {max_attempts} attempts at {what} (last error: {last_error})"
        ) from error
    try:
        return json.loads(answer)
    except ValueError as error:
        raise EmbeddingFailed(f"{model_id} answered {what} with a body that is not JSON") from error


def unit_vector(raw: object, *, model_id: str, what: str, dimension: int) -> list[float]:
    """`raw` as a unit-length vector of `dimension` floats, or EmbeddingFailed saying what is wrong with it."""
    if not isinstance(raw, list) or not all(
        isinstance(value, int | float) and not isinstance(value, bool) for value in raw
    ):
        raise EmbeddingFailed(f"{model_id} answered {what} without a float embedding")
    if len(raw) != dimension:
        raise EmbeddingFailed(f"{model_id} answered {what} with {len(raw)} dimensions where {dimension} were asked")
    vector = [float(value) for value in raw]
    norm = math.sqrt(math.fsum(value * value for value in vector))
    if not math.isfinite(norm) or norm == 0.0:
        raise EmbeddingFailed(f"{model_id} answered {what} with a vector that cannot be unit")
    if abs(norm - 1.0) > _UNIT_TOLERANCE:
        vector = [value / norm for value in vector]
    return vector


def in_order(
    calls: Sequence[Callable[[threading.Event], Result]], *, concurrency: int, thread_name_prefix: str
) -> list[Result]:
    """Each call's result, in input order, with up to `concurrency` calls in flight. Every call gets the same
    event: once one fails, the event is set, queued calls never start and running ones stop before their next
    attempt; the first real failure in input order goes up (a Cancelled is only the echo of another one)."""
    if concurrency == 1 or len(calls) == 1:
        never = threading.Event()
        return [call(never) for call in calls]
    stop = threading.Event()
    with ThreadPoolExecutor(max_workers=min(concurrency, len(calls)), thread_name_prefix=thread_name_prefix) as pool:
        futures = [pool.submit(call, stop) for call in calls]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        if any(future.exception() is not None for future in futures if future in done):
            stop.set()
            for future in futures:
                future.cancel()
            wait(futures)
            raise _first_failure(futures)
        return [future.result() for future in futures]


def _first_failure(futures: Sequence[Future[Result]]) -> BaseException:
    errors = [
        error
        for future in futures
        if not future.cancelled() and (error := future.exception()) is not None and not isinstance(error, Cancelled)
    ]
    return errors[0] if errors else EmbeddingFailed("embedding was cancelled")
