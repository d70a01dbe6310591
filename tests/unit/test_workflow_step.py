"""Which failures the state machine retries: the handlers' error names, decided by one classifier."""

from typing import Any

import psycopg
import pytest
from botocore.exceptions import (
    ClientError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
    ResponseStreamingError,
)
from psycopg_pool import PoolTimeout
from pydantic import ValidationError

from shared.adapters.transient import is_transient
from shared.bootstrap import workflow_step
from shared.domain.errors import InfrastructureUnavailable
from shared.domain.steps import Claimed, EmbedInput, StepInput, StepOutcome


def client_error(code: str, status: int = 400) -> ClientError:
    # Only the status of the metadata is read; botocore's types want every key of it.
    metadata: Any = {"HTTPStatusCode": status}
    return ClientError({"Error": {"Code": code, "Message": code}, "ResponseMetadata": metadata}, "Op")


@pytest.mark.parametrize(
    "error",
    [
        psycopg.OperationalError("connection to server at 10.0.3.7, port 5432 failed: Connection refused"),
        psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
        psycopg.errors.CannotConnectNow("the database system is starting up"),
        psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction"),
        psycopg.errors.SerializationFailure("could not serialize access"),
        psycopg.errors.TooManyConnections("too many connections"),
        PoolTimeout("couldn't get a connection after 10.00 sec"),
        client_error("ThrottlingException"),
        client_error("ProvisionedThroughputExceededException"),
        client_error("SlowDown", 503),
        client_error("SomethingNew", 500),
        EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com"),
        ReadTimeoutError(endpoint_url="https://textract.us-east-1.amazonaws.com"),
        ResponseStreamingError(error="the body stopped mid-read"),
        NoCredentialsError(),
        ConnectionResetError("reset by peer"),
        TimeoutError("timed out"),
    ],
    ids=type,
)
def test_infrastructure_that_did_not_answer_is_transient(error: Exception) -> None:
    assert is_transient(error)


@pytest.mark.parametrize(
    "error",
    [
        client_error("AccessDeniedException", 403),
        client_error("ValidationException"),
        client_error("NoSuchKey", 404),
        psycopg.errors.UniqueViolation("duplicate key"),
        psycopg.errors.InsufficientPrivilege("permission denied"),
        psycopg.errors.QueryCanceled("canceling statement due to statement timeout"),
        psycopg.errors.ProgramLimitExceeded("index row size exceeds maximum"),
        psycopg.errors.InvalidPassword("PAM authentication failed for user quire_app"),
        KeyError("batches"),
        ValueError("bad"),
    ],
    ids=type,
)
def test_a_refusal_or_a_bug_is_not_transient(error: Exception) -> None:
    assert not is_transient(error)


REFERENCES = {"tenantId": "acme", "fileId": "f-1", "versionId": "v-1", "attempt": 2, "rescan": False, "reindex": False}


def test_a_step_that_meets_an_outage_raises_the_name_the_state_machine_retries() -> None:
    @workflow_step(StepInput)
    def step(request: StepInput, context: object) -> StepOutcome:
        raise psycopg.OperationalError("connection refused")

    with pytest.raises(InfrastructureUnavailable, match="OperationalError: connection refused") as raised:
        step(REFERENCES, None)
    assert type(raised.value).__name__ == "InfrastructureUnavailable"
    assert isinstance(raised.value.__cause__, psycopg.OperationalError)


def test_a_step_with_a_bug_keeps_its_own_error_so_it_is_not_retried() -> None:
    @workflow_step(StepInput)
    def step(request: StepInput, context: object) -> StepOutcome:
        raise KeyError("batches")

    with pytest.raises(KeyError):
        step(REFERENCES, None)


def test_an_event_that_is_not_the_steps_input_is_refused_and_not_retried() -> None:
    @workflow_step(EmbedInput)
    def step(request: EmbedInput, context: object) -> StepOutcome:
        return StepOutcome.going_on(request)

    # Given an embed task's event without its batch number
    with pytest.raises(ValidationError, match="batch"):
        step(REFERENCES, None)


def test_a_step_that_succeeds_returns_its_outcome_as_the_state_machine_carries_it() -> None:
    @workflow_step(StepInput)
    def step(request: StepInput, context: object) -> StepOutcome:
        return Claimed.going_on(request, media_type="text/plain", byte_size=9)

    # The references come back camelCase, with the step's own fields; absent ones are left out.
    assert step({**REFERENCES, "ignored": True}, None) == {
        **REFERENCES,
        "proceed": True,
        "mediaType": "text/plain",
        "byteSize": 9,
    }


def test_an_error_raised_from_an_outage_is_transient_too() -> None:
    wrapped = RuntimeError("could not store the chunks")
    wrapped.__cause__ = psycopg.OperationalError("server closed the connection unexpectedly")
    assert is_transient(wrapped)
    assert not is_transient(RuntimeError("could not store the chunks"))
