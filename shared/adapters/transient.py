"""Which exceptions mean "the infrastructure did not answer" (worth retrying) rather than a bug.

The workflow retries a step only on infrastructure errors: a dropped or refused database connection (Aurora
resuming from a pause, a failover, RDS Proxy busy), an AWS API throttling or failing on its side, a network
timeout. Everything else (a bug, a permission missing, bad input) fails the step at once: retrying it would
give the same answer. SDK modules are looked up only if the process has imported them already: an
exception of a library never imported cannot be in flight.
"""

import sys

# AWS error codes that mean busy or broken on the service's side (not a refusal of this request).
TRANSIENT_AWS_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "ProvisionedThroughputExceeded",
        "SlowDown",
        "RequestTimeout",
        "RequestTimeoutException",
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "InternalServerException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "ServiceException",
        "ModelNotReadyException",
        "LimitExceededException",
        "EC2ThrottledException",
    }
)


# PostgreSQL error classes and codes that another try may not meet: the connection (08), a serialization or
# deadlock loser (40001, 40P01), too many connections (53300), the server shutting down or restarting
# (57P01-57P03), a read-only transaction (25006: Aurora failing over to the new writer), and an idle
# transaction timed out by the server (25P03). Not a statement timeout (57014), a program limit (54) or a
# refused login (28): those give the same answer again.
_TRANSIENT_SQLSTATE_CLASSES = ("08",)
_TRANSIENT_SQLSTATES = frozenset({"40001", "40P01", "53300", "57P01", "57P02", "57P03", "25006", "25P03"})


def is_transient(error: BaseException) -> bool:
    """True for an error of the infrastructure that may go away if the same call is made again later (the
    error itself, or what it was raised from)."""
    seen = 0
    current: BaseException | None = error
    while current is not None and seen < 5:
        if _transient(current):
            return True
        current, seen = current.__cause__, seen + 1
    return False


def _transient(error: BaseException) -> bool:
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None and isinstance(error, psycopg.Error):
        sqlstate = error.sqlstate
        if sqlstate is None:
            # No answer from a server at all (refused, dropped, TLS failed before a word): the connection.
            return isinstance(error, psycopg.OperationalError)
        return sqlstate.startswith(_TRANSIENT_SQLSTATE_CLASSES) or sqlstate in _TRANSIENT_SQLSTATES
    pool = sys.modules.get("psycopg_pool")
    if pool is not None and isinstance(error, pool.PoolTimeout):
        return True
    botocore_errors = sys.modules.get("botocore.exceptions")
    if botocore_errors is not None:
        if isinstance(error, botocore_errors.ClientError):
            response = error.response
            code = str(response.get("Error", {}).get("Code", ""))
            status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
            return code in TRANSIENT_AWS_CODES or status >= 500
        # No answer, none in time, or one cut short (a body that stopped mid-read); credentials the
        # environment could not hand out just then.
        if isinstance(
            error,
            (
                botocore_errors.ConnectionError,
                botocore_errors.HTTPClientError,
                botocore_errors.ResponseStreamingError,
                botocore_errors.NoCredentialsError,
                botocore_errors.CredentialRetrievalError,
            ),
        ):
            return True
    return isinstance(error, (ConnectionError, TimeoutError))
