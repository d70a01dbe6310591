"""What the AWS adapters share: a client built on first use and a ClientError's code; and, for those
that retry on their own, full-jitter back-off and the loop that retries a call while the service is busy.

The adapters create their clients with botocore's own retries off, so one adapter attempt is one call
and the back-off does not multiply. Each adapter decides which error codes mean "busy, try again" and
turns the others into its own refusals (`refuse`); what it neither retries nor refuses goes up as it is.
"""

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from botocore.exceptions import ClientError, ConnectionClosedError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError

Client = TypeVar("Client")
Result = TypeVar("Result")

# Transport failures: no answer at all (connect), none in time (read), or a connection cut mid-answer.
RETRYABLE_TRANSPORT: tuple[type[Exception], ...] = (BotoConnectionError, ReadTimeoutError, ConnectionClosedError)


def bedrock_runtime_factory(
    region: str, *, connect_timeout: float, read_timeout: float, max_pool_connections: int = 10
) -> Callable[[], Any]:
    """A zero-argument builder of a bedrock-runtime client with botocore's retries off (the adapter retries), for
    LazyClient: boto3 is imported when the first call needs it, not when a handler module loads."""

    def build_client() -> Any:
        import boto3
        from botocore.config import Config

        config = Config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            max_pool_connections=max_pool_connections,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
        )
        return boto3.client("bedrock-runtime", region_name=region, config=config)

    return build_client


class LazyClient(Generic[Client]):
    """A boto3 client, or a zero-argument factory for one called on first use (a function that never
    calls the service never builds a client). boto3 clients are thread-safe; building one is not."""

    def __init__(self, client_or_factory: "Client | Callable[[], Client]") -> None:
        # A boto3 client is not callable; a factory is.
        self._factory: Callable[[], Client] | None = client_or_factory if callable(client_or_factory) else None
        self._client: Client | None = None if callable(client_or_factory) else client_or_factory
        self._lock = threading.Lock()

    def get(self) -> Client:
        with self._lock:
            if self._client is None:
                assert self._factory is not None
                self._client = self._factory()
            return self._client


@dataclass(frozen=True)
class Backoff:
    """Full jitter: uniformly random up to base * 2^(attempt - 1), that ceiling capped."""

    base_seconds: float
    cap_seconds: float
    random: Callable[[], float]

    def delay(self, attempt: int) -> float:
        return min(self.cap_seconds, self.base_seconds * 2.0 ** (attempt - 1)) * self.random()


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def error_message(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Message", ""))


def check_attempts(max_attempts: int) -> int:
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
    return max_attempts


def retried(
    call: Callable[[], Result],
    *,
    max_attempts: int,
    retryable_codes: frozenset[str],
    backoff: Backoff,
    sleep: Callable[[float], None],
    refuse: Callable[[ClientError], None] = lambda error: None,
    transport: tuple[type[Exception], ...] = RETRYABLE_TRANSPORT,
) -> Result:
    """`call()`, tried again after a pause while the service answers busy (or not at all), up to
    `max_attempts` calls; then the last error goes up for the workflow to retry. `refuse` raises the
    adapter's own error for a code that means no retry can help."""
    for attempt in range(1, max_attempts + 1):
        try:
            return call()
        except ClientError as error:
            refuse(error)
            if error_code(error) not in retryable_codes or attempt == max_attempts:
                raise
        except transport:
            if attempt == max_attempts:
                raise
        sleep(backoff.delay(attempt))
    raise AssertionError("unreachable: the last attempt returns or raises")
