"""One Bedrock Converse call under the retry policy every model adapter shares, and the tables it reads.

InvokeModel answers the same error codes, so the embedder reads the tables and `model_not_enabled` too. An
adapter keeps its prompt and its reading of the answer; which failures are retried, for how long, and how a
failure reads to the caller are decided here once (docs/answers.md#model-calls).
"""

import logging
import random as _random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypedDict

from botocore.exceptions import ClientError, ConnectTimeoutError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError

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
from shared.domain.errors import CapabilityUnavailable

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from mypy_boto3_bedrock_runtime import BedrockRuntimeClient
    from mypy_boto3_bedrock_runtime.type_defs import ConverseResponseTypeDef
else:
    BedrockRuntimeClient = Any

# Worth another call after a pause: the model or the service is busy, warming up or slow.
RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "ModelTimeoutException",
        "InternalServerException",
    }
)
# The model is not there for this account and region: an operator has to act, no retry will help.
NOT_ENABLED_CODES = frozenset({"AccessDeniedException", "ResourceNotFoundException"})
# The model answered but its output was withheld: whatever text came with it is not the answer.
WITHHELD_STOP_REASONS = frozenset({"content_filtered", "guardrail_intervened"})

# What a model still answering a retryable code after the retries is doing ("{task}" is the adapter's).
_STILL_BUSY = {
    "ThrottlingException": "is throttling this deployment's requests",
    "ModelNotReadyException": "is not ready to serve requests yet",
    "ModelTimeoutException": "took too long to {task}",
}
# Every failure of one call: the service's answer, or none in time.
_CALL_FAILURES: tuple[type[Exception], ...] = (ClientError, *RETRYABLE_TRANSPORT)


@dataclass(frozen=True)
class ModelTask:
    """What the model is asked to do, in the words its failures are told in: "the answer model M is not
    enabled", "M took too long to draft the answer", "M failed while drafting the answer", "… past the time an
    answer may take", "M refused the answer request as invalid (a model that does not take a forced tool, …)"."""

    role: str
    task: str
    doing: str
    result: str
    invalid_because: str


def model_not_enabled(region: str, code: str, message: str, *, role: str, model_id: str) -> str:
    """Logs AWS's own words (account ids, role ARNs, the action to grant) for the operator, and returns the
    sentence the caller reads: the fix is the operator's, and it is in the log."""
    _log.error(
        "Bedrock answered %s for %s in %s: %s. Enable model access for it in the Amazon Bedrock console (Model"
        " access) and grant the function's role bedrock:InvokeModel on it",
        code,
        model_id,
        region,
        message,
    )
    return (
        f"the {role} model {model_id} is not enabled for this deployment: an operator must enable access to it"
        " (the cause is in the function's log)"
    )


class ConverseCall:
    """Converse calls to `model_id` for one adapter, retried with full-jitter back-off while the model is busy.

    `client` is a bedrock-runtime client (botocore's retries off), or a zero-argument factory for one called on
    the first call. A model not enabled is always CapabilityUnavailable (logged for the operator). The other
    failures depend on where the call runs:
    - in a request (`window_seconds` set): no retry starts past the window, and every failure is
      CapabilityUnavailable with a sentence (`refuse` may word a code its own way), so the caller falls back;
    - in a pipeline step (`window_seconds=None`): `refuse` raises the adapter's own error for the codes it knows,
      and the last error of a model still busy goes up as it came, for the workflow to retry the step.
    """

    def __init__(
        self,
        client: "BedrockRuntimeClient | Callable[[], BedrockRuntimeClient]",
        *,
        model_id: str,
        capability: Capability,
        task: ModelTask,
        max_attempts: int,
        backoff: Backoff,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        window_seconds: float | None = None,
        refuse: Callable[[ClientError], None] | None = None,
    ) -> None:
        self._client: LazyClient[BedrockRuntimeClient] = LazyClient(client)
        self.model_id = model_id
        self._capability = capability
        self._task = task
        self._max_attempts = check_attempts(max_attempts)
        self._backoff = backoff
        self._sleep = sleep
        self._clock = clock
        self._window = window_seconds
        self._refuse = refuse if refuse is not None else self._refused

    def call(self, request: Mapping[str, Any]) -> "ConverseResponseTypeDef":
        client = self._client.get()
        started = self._clock()
        last_failure: list[Exception] = []

        def converse() -> "ConverseResponseTypeDef":
            try:
                return client.converse(**request)
            except _CALL_FAILURES as error:
                last_failure[:] = [error]
                raise

        def pause(seconds: float) -> None:
            if self._window is not None and self._clock() + seconds - started > self._window:
                how_long = f"past the time {self._task.result} may take"
                raise self.unavailable(self._still_failing(last_failure[0], how_long)) from last_failure[0]
            self._sleep(seconds)

        def refuse(error: ClientError) -> None:
            code = error_code(error)
            if code in NOT_ENABLED_CODES:
                reason = model_not_enabled(
                    client.meta.region_name,
                    code,
                    error_message(error),
                    role=self._task.role,
                    model_id=self.model_id,
                )
                raise self.unavailable(reason) from error
            if code not in RETRYABLE_CODES:
                self._refuse(error)

        try:
            return retried(
                converse,
                max_attempts=self._max_attempts,
                retryable_codes=RETRYABLE_CODES,
                backoff=self._backoff,
                sleep=pause,
                refuse=refuse,
            )
        except _CALL_FAILURES as error:  # still failing on the last attempt
            if self._window is None:
                raise
            raise self.unavailable(self._still_failing(error, f"through {self._max_attempts} attempts")) from error

    @property
    def region(self) -> str:
        return self._client.get().meta.region_name

    def unavailable(self, reason: str) -> CapabilityUnavailable:
        return CapabilityUnavailable(self._capability.value, reason)

    def _refused(self, error: ClientError) -> None:
        """A request's refusal of a code no retry helps with: a sentence for the caller, AWS's words logged."""
        code, message, task = error_code(error), error_message(error), self._task
        _log.warning("Bedrock refused the %s request: %s: %s", task.role, code, message)
        if code == "ValidationException":
            raise self.unavailable(
                f"{self.model_id} refused the {task.role} request as invalid ({task.invalid_because}; the cause is"
                " in the function's log)"
            ) from error
        if code == "ModelErrorException":
            raise self.unavailable(f"{self.model_id} failed while {task.doing}") from error
        raise self.unavailable(f"{self.model_id} could not {task.task} ({code or 'error'})") from error

    def _still_failing(self, error: Exception, how_long: str) -> str:
        """The sentence for a model still busy or silent after the attempts (or the window): the last failure."""
        if isinstance(error, ClientError):
            cause = error_code(error) or "error"
            what = _STILL_BUSY.get(cause, "was unavailable").format(task=self._task.task)
        else:
            cause = type(error).__name__
            if isinstance(error, ConnectTimeoutError):
                what = "could not be reached in time"
            elif isinstance(error, ReadTimeoutError):
                what = "did not answer in time"
            elif isinstance(error, BotoConnectionError):
                what = "could not be reached"
            else:  # the connection closed before the answer was complete
                what = "did not answer"
        return f"{self.model_id} {what} ({cause}, {how_long})"


# The back-off between a busy model's attempts: full jitter from half a second, doubling, at most 4 s.
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 4.0


def check_at_least_one(**bounds: int) -> None:
    """A model adapter's bounds (what it sends, what it asks for): each at least 1, else a ValueError naming it."""
    for name, value in bounds.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, not {value}")


class ConverseOptions(TypedDict, total=False):
    """How a ConverseModel calls its model, which a subclass passes on as it was given (tests inject the clocks)."""

    max_attempts: int
    retry_window_seconds: float
    sleep: Callable[[float], None]
    random: Callable[[], float]
    clock: Callable[[], float]


class ConverseModel:
    """What a Converse model adapter is besides its prompt and its reading of the answer (answers, chunk contexts,
    summaries): the model it names, one ConverseCall with the shared back-off within a window (every failure is
    CapabilityUnavailable, so the caller falls back), a client built on first use, and a capability never probed.
    A subclass names its CAPABILITY, its TASK, what its model must be (NEEDS), and may change the window and the
    client's timeouts.

    `client` is a bedrock-runtime client, or a zero-argument factory for one called on the first call. `sleep`,
    `random` and `clock` are injected so retries can be tested without waiting.
    """

    CAPABILITY: ClassVar[Capability]
    TASK: ClassVar[ModelTask]
    NEEDS: ClassVar[str]  # what model_id must name: "that takes a forced tool"
    RETRY_WINDOW_SECONDS: ClassVar[float] = 6.0
    # The defaults fit the API function's 29 seconds: a retry starts within 6 s of the call, and then has the connect
    # and read timeouts (the answer is not streamed: the read waits for all of it).
    CONNECT_TIMEOUT: ClassVar[float] = 2.0
    READ_TIMEOUT: ClassVar[float] = 18.0
    MAX_POOL_CONNECTIONS: ClassVar[int] = 10

    def __init__(
        self,
        client: "BedrockRuntimeClient | Callable[[], BedrockRuntimeClient]",
        *,
        model_id: str,
        max_attempts: int = 3,
        retry_window_seconds: float | None = None,  # None: the class's RETRY_WINDOW_SECONDS
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = _random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not model_id:
            raise ValueError(f"model_id must name a Bedrock model or inference profile {self.NEEDS}")
        self._model_id = model_id
        self._converse = ConverseCall(
            client,
            model_id=model_id,
            capability=self.CAPABILITY,
            task=self.TASK,
            max_attempts=max_attempts,
            backoff=Backoff(BACKOFF_BASE_SECONDS, BACKOFF_CAP_SECONDS, random),
            sleep=sleep,
            clock=clock,
            window_seconds=self.RETRY_WINDOW_SECONDS if retry_window_seconds is None else retry_window_seconds,
        )

    @classmethod
    def from_region(
        cls,
        region: str,
        model_id: str,
        *,
        max_attempts: int = 3,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
    ) -> Self:
        """An adapter whose client is built on first use, with botocore's retries off (ConverseCall retries), and
        the class's timeouts unless given."""
        build_client: Callable[[], BedrockRuntimeClient] = bedrock_runtime_factory(
            region,
            connect_timeout=cls.CONNECT_TIMEOUT if connect_timeout is None else connect_timeout,
            read_timeout=cls.READ_TIMEOUT if read_timeout is None else read_timeout,
            max_pool_connections=cls.MAX_POOL_CONNECTIONS,
        )
        return cls(build_client, model_id=model_id, max_attempts=max_attempts)

    @property
    def model_id(self) -> str:
        return self._model_id

    def capability(self) -> CapabilityStatus:
        # No probe call (it would cost money on every status check): a model that cannot be invoked shows up as
        # CapabilityUnavailable on its first call.
        return CapabilityStatus.ready(provider=f"bedrock:{self._model_id}")
