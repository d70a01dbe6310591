"""The deployed stack's Python functions, run in this process as Lambda would run them: each from its resolved
environment, with the credentials of its own role's session (Lambda assumes the function's role), invoked through
moto's Lambda API (so the caller's grant to invoke it is judged too), one invocation at a time.

What stands in: the database (Aurora behind RDS Proxy) is the embedded PostgreSQL, reached as the application role
with a password that stands for the IAM token (given only when the role may rds-db:connect); Bedrock's embeddings
are the local model's vectors zero-padded to Titan's dimension (cosine is unchanged); Textract is RapidOCR in
process, given to the recognize function (moto's Textract answers canned text). docs/testing.md, "Handlers under
IAM enforcement".
"""

import importlib
import json
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from awslambdaric.lambda_runtime_marshaller import LambdaMarshaller
from moto.awslambda_simple.models import LambdaSimpleBackend
from moto.bedrockruntime.models import BedrockRuntimeBackend
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from shared.adapters.postgres.database import Database
from shared.bootstrap import AwsAdapters, Container, overridden
from shared.config import Settings
from shared.local.http_api import LocalLambdaContext
from tests.builders.iam_judge import IamJudge
from tests.builders.moto_stack import REGION, DeployedFunction, DeployedStack


@dataclass(frozen=True)
class Invocation:
    function: str  # logical id
    step: str  # the handler's package: functions/<step>/handler.py
    event: dict[str, Any]
    error: str | None
    # The size of the answer the function gave, in bytes of JSON (0 when it raised).
    answered: int = 0


@dataclass
class DeployedFunctions:
    """Runs the stack's functions; `given[logical id]` names adapters that stand in for that function's."""

    stack: DeployedStack
    database_url: str
    admin: boto3.Session
    judge: IamJudge
    given: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    invocations: list[Invocation] = field(default_factory=list)
    _sessions: dict[str, boto3.Session] = field(default_factory=dict)
    _containers: dict[str, Container] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def session(self, function: DeployedFunction) -> boto3.Session:
        """The function's role, assumed as Lambda assumes it (by the harness, before enforcement starts)."""
        if function.logical_id not in self._sessions:
            credentials = client(self.admin, "sts").assume_role(
                RoleArn=function.role_arn, RoleSessionName=function.name[:64]
            )["Credentials"]
            self._sessions[function.logical_id] = boto3.Session(
                aws_access_key_id=credentials["AccessKeyId"],
                aws_secret_access_key=credentials["SecretAccessKey"],
                aws_session_token=credentials["SessionToken"],
                region_name=REGION,
            )
        return self._sessions[function.logical_id]

    def settings(self, function: DeployedFunction) -> Settings:
        """The function's settings, read from its resolved environment as its handler reads them (the database's
        stand-in is given to its adapters: `_database`)."""
        with pytest.MonkeyPatch.context() as patch:
            for name, value in function.environment.items():
                patch.setenv(name, value)
            return Settings()

    def container(self, function: DeployedFunction) -> Container:
        if function.logical_id not in self._containers:
            settings = self.settings(function)
            given = {"database": self._database(function), **self.given.get(function.logical_id, {})}
            adapters = AwsAdapters(settings, **given)
            self._containers[function.logical_id] = Container(settings, adapters)
        return self._containers[function.logical_id]

    def _database(self, function: DeployedFunction) -> Database:
        """The embedded PostgreSQL where the proxy would be. Each new connection's password stands for the IAM
        token: the application role's password when the function's role may rds-db:connect as its database
        user, else one PostgreSQL refuses, as the proxy refuses a token it cannot authorize."""
        url = {name: str(value) for name, value in conninfo_to_dict(self.database_url).items() if value is not None}
        password = url.pop("password", "")
        user_arn = self.stack.database_user_arn(function.environment["QUIRE_DATABASE_USER"])

        def token() -> str:
            if self.judge.allows(function.role_arn, "rds-db:connect", user_arn):
                return password
            return "refused-" + secrets.token_hex(8)

        # A refused token fails a connection at once; the pool need not wait long for another.
        return Database(make_conninfo(**url), max_size=2, wait_seconds=1, password=token)

    def prepare(self) -> None:
        """Sessions for every function of Quire's own (the MCP server's included), before enforcement starts:
        their roles trust Lambda, not the harness's user."""
        for function in self.stack.functions.values():
            if function.handler.startswith("functions"):
                self.session(function)

    def by_name(self, name: str) -> DeployedFunction:
        name = name.rsplit(":", 1)[-1] if name.startswith("arn:") else name
        (found,) = [f for f in self.stack.functions.values() if f.name == name]
        return found

    @contextmanager
    def acting(self, function: DeployedFunction) -> Iterator[Container]:
        """Within this block, code runs as `function` would: its session's credentials, its container."""
        with self._lock, _default_session(self.session(function)), overridden(self.container(function)) as container:
            yield container

    def run(self, function: DeployedFunction, event: dict[str, Any]) -> str:
        """The handler's answer as the Lambda runtime marshals it (awslambdaric's marshaller: a result it cannot
        marshal is Runtime.MarshalError), run with the function's session as the process's default credentials
        and its container in place; one at a time, as each would run in its own sandbox."""
        module, _, name = function.handler.rpartition(".")
        handler: Callable[..., Any] = getattr(importlib.import_module(module), name)
        step = function.handler.split(".")[1]
        context = LocalLambdaContext(function_name=function.name, invoked_function_arn=function.arn)
        with self.acting(function):
            try:
                answer, _content_type = LambdaMarshaller().marshal_response(handler(event, context))
            except Exception as error:
                self.invocations.append(Invocation(function.logical_id, step, event, error_type(error)))
                raise
            self.invocations.append(Invocation(function.logical_id, step, event, None, len(answer)))
            return str(answer)

    def steps(self, version_id: str) -> list[str]:
        """The pipeline steps (handler package names) invoked for a version, in order."""
        return [i.step for i in self.invocations if i.event.get("versionId") == version_id]

    def cold_start(self, function: DeployedFunction) -> None:
        """The function's next invocation starts in a new sandbox: a new container, new database connections
        (each signing its token again), new tenant sessions."""
        with self._lock:
            container = self._containers.pop(function.logical_id, None)
        if container is not None and "database" in container.adapters.__dict__:
            container.adapters.database.close()

    def close(self) -> None:
        for container in self._containers.values():
            if "database" in container.adapters.__dict__:
                container.adapters.database.close()


@contextmanager
def invoked_through_moto(functions: DeployedFunctions, state_machine: boto3.Session) -> Iterator[None]:
    """moto's Lambda runs the deployed handlers; Step Functions invokes them with the state machine's role."""
    original_invoke = LambdaSimpleBackend.invoke
    original_client = vars(lambda_eval_utils)["boto_client_for"]

    def invoke(  # noqa: PLR0917 - moto's LambdaSimpleBackend.invoke, called positionally
        backend: LambdaSimpleBackend, function_name: str, qualifier: Any, body: Any, headers: Any, response: Any
    ) -> bytes:
        function = functions.by_name(function_name)
        event = json.loads(body) if body else {}
        try:
            answer = functions.run(function, event)
        except Exception as error:  # what the Lambda runtime reports of an unhandled exception
            response["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": error_type(error), "errorMessage": str(error)}).encode()
        return answer.encode()

    def client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        return client(state_machine, service)

    LambdaSimpleBackend.invoke = invoke  # type: ignore[assignment, method-assign]
    vars(lambda_eval_utils)["boto_client_for"] = client_for
    try:
        yield
    finally:
        LambdaSimpleBackend.invoke = original_invoke  # type: ignore[method-assign]
        vars(lambda_eval_utils)["boto_client_for"] = original_client


@contextmanager
def bedrock_answered_by(embed: Callable[[list[str]], list[list[float]]]) -> Iterator[None]:
    """moto's bedrock-runtime (which answers `{}`) answers Titan's embedding request with `embed`'s vector,
    zero-padded to the dimension asked for."""
    original = BedrockRuntimeBackend.invoke_model

    def invoke_model(self: BedrockRuntimeBackend, payload: dict[str, Any], model_id: str) -> dict[str, Any]:
        if not model_id.startswith("amazon.titan-embed"):
            raise NotImplementedError(f"no stand-in answers {model_id}")
        (vector,) = embed([payload["inputText"]])
        dimension = int(payload.get("dimensions", 1024))
        padded = list(vector) + [0.0] * (dimension - len(vector))
        return {"embedding": padded, "inputTextTokenCount": len(payload["inputText"].split())}

    BedrockRuntimeBackend.invoke_model = invoke_model  # type: ignore[method-assign]
    try:
        yield
    finally:
        BedrockRuntimeBackend.invoke_model = original  # type: ignore[method-assign]


_DEFAULT_SESSION_LOCK = threading.RLock()


@contextmanager
def _default_session(session: boto3.Session) -> Iterator[None]:
    """Clients made without explicit credentials take `session`'s, as a Lambda process takes its role's."""
    with _DEFAULT_SESSION_LOCK:
        previous = boto3.DEFAULT_SESSION
        boto3.DEFAULT_SESSION = session
        try:
            yield
        finally:
            boto3.DEFAULT_SESSION = previous


def error_type(error: Exception) -> str:
    """The errorType Lambda reports: the runtime's own (Runtime.MarshalError), else the exception's class name."""
    return str(getattr(error, "exception_type", None) or type(error).__name__)


def client(session: boto3.Session, service: str) -> Any:
    """A client of the (mocked) account's region made with `session`'s credentials."""
    return session.client(service, region_name=REGION)  # type: ignore[call-overload]
