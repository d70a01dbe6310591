"""A fake of the Lambda Runtime API on loopback, and a handler run through `awslambdaric` against it.

`awslambdaric` is the runtime interface client AWS's Python images run (`python -m awslambdaric <handler>`): it
resolves the handler path, builds the context object, calls the handler and marshals its result, or its
exception, exactly as Lambda does. All it needs of Lambda is the Runtime API, a small HTTP contract, which
`FakeLambdaRuntimeApi` serves: one invocation (`GET /2018-06-01/runtime/invocation/next`), then the function's
answer (`POST .../<request id>/response` or `.../error`, or `POST /2018-06-01/runtime/init/error` when the
handler cannot even be loaded). A second `next` waits, as Lambda's does, until the run is stopped.

The server speaks HTTP/1.1 with a Content-Length on every answer, as Lambda's does (Python's default is HTTP/1.0;
awslambdaric 4.2.2 read either here, but it is not the contract).

The process runs as Lambda's would: the packaged code as the task root (its working directory, first on the
path: handler resolution is against the package, not the repository), then the layers, then the client's own
packages, and Python's `site` off (`-S`), so that the repository's editable install cannot lend the package a
module it does not ship (`shared.local`, say). What each function is given (its handler string, memory, timeout,
Powertools settings) is read from a synthesized template (`quire_functions`).
"""

import json
import os
import signal
import subprocess
import sys
import sysconfig
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

RUNTIME_API_PREFIX = "/2018-06-01/runtime"
# What Lambda's Python 3.12 runtime sets (the deployed runtime, infra/constructs/functions.py), whatever Python
# runs the client here: it selects the marshaller's encoder and the client's polling, as on Lambda.
EXECUTION_ENVIRONMENT = "AWS_Lambda_python3.12"
REGION = "us-east-1"
ACCOUNT = "123456789012"

# What every handler is given to run on: the local stack's settings, not the deployed ones (those name the RDS
# Proxy, Step Functions, Bedrock); of the template's own variables, Powertools' and the environment's name.
KEPT_FROM_TEMPLATE = ("POWERTOOLS_", "QUIRE_ENVIRONMENT")

AnswerKind = Literal["response", "error", "init-error"]


@dataclass(frozen=True)
class RuntimeAnswer:
    """What the function posted back: its result (`response`), or an error envelope (errorType, errorMessage,
    stackTrace) for an invocation (`error`) or for loading the handler (`init-error`)."""

    kind: AnswerKind
    request_id: str | None
    body: bytes
    content_type: str | None
    # Lambda-Runtime-Function-Error-Type, which the client sets on errors.
    error_type_header: str | None = None

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def error_type(self) -> str | None:
        if self.kind == "response":
            return None
        return str(self.json().get("errorType"))


def x_ray_trace_header() -> str:
    """A sampled trace, as Lambda-Runtime-Trace-Id carries it (the client puts it in _X_AMZN_TRACE_ID)."""
    return f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]};Parent={uuid.uuid4().hex[:16]};Sampled=1"


@dataclass(frozen=True)
class Invocation:
    """One event as the Runtime API hands it over, with the headers the client builds the context from."""

    event: bytes
    function_name: str
    timeout_seconds: float
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    trace_id: str = field(
        default_factory=lambda: (
            f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]};Parent={uuid.uuid4().hex[:16]};Sampled=1"
        )
    )

    @property
    def function_arn(self) -> str:
        return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.function_name}"

    def headers(self) -> dict[str, str]:
        deadline_ms = int((time.time() + self.timeout_seconds) * 1000)
        return {
            "Content-Type": "application/json",
            "Lambda-Runtime-Aws-Request-Id": self.request_id,
            "Lambda-Runtime-Deadline-Ms": str(deadline_ms),
            "Lambda-Runtime-Invoked-Function-Arn": self.function_arn,
            "Lambda-Runtime-Trace-Id": self.trace_id,
        }


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # The function's process is killed while its second `next` waits: a reset connection is the run's end.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeLambdaRuntimeApi:
    """The Runtime API of one execution environment that receives one invocation (a fake of Lambda's service)."""

    def __init__(self, invocation: Invocation) -> None:
        self.invocation = invocation
        self.answers: list[RuntimeAnswer] = []
        # Requests the fake does not know, answered 404: a client speaking another contract shows here.
        self.unknown_requests: list[str] = []
        self._handed_out = False
        self._answered = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = _QuietServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-runtime-api", daemon=True)

    @property
    def address(self) -> str:
        """host:port, as AWS_LAMBDA_RUNTIME_API gives it."""
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def start(self) -> "FakeLambdaRuntimeApi":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def wait_for_answer(self, timeout: float) -> RuntimeAnswer | None:
        return self.answers[0] if self._answered.wait(timeout) else None

    def _next_event(self) -> tuple[dict[str, str], bytes] | None:
        with self._lock:
            first, self._handed_out = not self._handed_out, True
        if first:
            return self.invocation.headers(), self.invocation.event
        # Lambda's next blocks until there is work; here there never is, until the run ends.
        self._stopping.wait()
        return None

    def _record(self, answer: RuntimeAnswer) -> None:
        with self._lock:
            self.answers.append(answer)
        self._answered.set()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class RuntimeApiHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                if self.path != f"{RUNTIME_API_PREFIX}/invocation/next":
                    api.unknown_requests.append(f"GET {self.path}")
                    self._reply(404, b"{}")
                    return
                handed = api._next_event()
                if handed is None:
                    self.close_connection = True
                    return
                headers, body = handed
                self._reply(200, body, headers)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                parts = self.path.removeprefix(RUNTIME_API_PREFIX).strip("/").split("/")
                kind: AnswerKind | None = None
                request_id = None
                if parts == ["init", "error"]:
                    kind = "init-error"
                elif len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
                    kind, request_id = ("response" if parts[2] == "response" else "error"), parts[1]
                if kind is None:
                    api.unknown_requests.append(f"POST {self.path}")
                    self._reply(404, b"{}")
                    return
                self._reply(202, b'{"status":"OK"}')
                api._record(
                    RuntimeAnswer(
                        kind=kind,
                        request_id=request_id,
                        body=body,
                        content_type=self.headers.get("Content-Type"),
                        error_type_header=self.headers.get("Lambda-Runtime-Function-Error-Type"),
                    )
                )

            def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for name, value in (headers or {"Content-Type": "application/json"}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the runs' own logs are what a failure shows

        return RuntimeApiHandler


@dataclass
class LambdaRun:
    """A handler invoked once through awslambdaric in a process of its own: start now, `finish` later, so
    that several runs can be under way at once."""

    handler: str
    invocation: Invocation
    api: FakeLambdaRuntimeApi
    process: subprocess.Popen[bytes]
    log_path: Path
    started: float

    def finish(self, timeout: float) -> "FinishedRun":
        """Wait for the function's answer (or its process's end), then stop the process and the fake."""
        deadline = time.monotonic() + timeout
        answer = None
        while answer is None and time.monotonic() < deadline:
            answer = self.api.wait_for_answer(0.05)
            if answer is None and self.process.poll() is not None:
                answer = self.api.wait_for_answer(0.5)  # a post racing the exit
                break
        seconds = time.monotonic() - self.started
        exit_code = self.process.poll()
        if exit_code is None:
            # The whole group: a handler's own children (a sandboxed parser) go with it, as Lambda's freeze would.
            os.killpg(self.process.pid, signal.SIGKILL)
            exit_code = self.process.wait(timeout=30)
        self.api.stop()
        return FinishedRun(
            handler=self.handler,
            invocation=self.invocation,
            answer=answer,
            exit_code=exit_code,
            log=self.log_path.read_text(encoding="utf-8", errors="replace"),
            seconds=seconds,
            unknown_requests=list(self.api.unknown_requests),
        )


@dataclass(frozen=True)
class FinishedRun:
    handler: str
    invocation: Invocation
    answer: RuntimeAnswer | None
    # The process's exit code: negative for a signal (the client's crash), or -9 when it was stopped waiting.
    exit_code: int
    log: str
    seconds: float
    unknown_requests: list[str]

    def result(self) -> Any:
        """The handler's marshalled result; anything else (no answer, an error) fails with the run's log."""
        assert self.answer is not None, f"{self.handler} gave no answer (exit {self.exit_code}):\n{self.log[-4000:]}"
        assert self.answer.kind == "response", (
            f"{self.handler} answered {self.answer.kind}: {self.answer.body[:2000]!r}\n{self.log[-4000:]}"
        )
        assert self.answer.request_id == self.invocation.request_id
        return self.answer.json()

    def failure(self) -> RuntimeAnswer:
        """The error the run posted (an invocation's or the handler's loading); a result fails the test."""
        assert self.answer is not None, f"{self.handler} gave no answer (exit {self.exit_code}):\n{self.log[-4000:]}"
        assert self.answer.kind != "response", f"{self.handler} answered a result: {self.answer.body[:2000]!r}"
        return self.answer


def site_packages() -> list[str]:
    """This Python's site-packages directories (the path `-S` leaves out), without the .pth files they hold."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def lambda_environment(
    *, task_root: Path, handler: str, function_name: str, memory_mb: int, runtime_api: str
) -> dict[str, str]:
    """The variables Lambda's runtime sets for every function (the documented reserved ones that matter here)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "LAMBDA_TASK_ROOT": str(task_root),
        "_HANDLER": handler,
        "AWS_EXECUTION_ENV": EXECUTION_ENVIRONMENT,
        "AWS_LAMBDA_RUNTIME_API": runtime_api,
        "AWS_LAMBDA_FUNCTION_NAME": function_name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function_name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": f"2026/01/01/[$LATEST]{uuid.uuid4().hex}",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        # Active tracing's segments go to the X-Ray daemon's UDP port: kept on loopback, where nothing listens.
        "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
    }


def start_lambda_run(
    handler: str,
    event: Any,
    *,
    task_root: Path,
    environment: dict[str, str],
    log_dir: Path,
    layers: Sequence[Path] = (),
    function_name: str | None = None,
    memory_mb: int = 1024,
    timeout_seconds: float = 60,
    python: str = sys.executable,
) -> LambdaRun:
    """Start `python -S -m awslambdaric <handler>` in `task_root` (the packaged code: handler resolution is
    against it, as on Lambda), `layers` next on the path (as /opt/python), then this Python's site-packages (the
    client, and the dependencies the layer would hold), with Lambda's reserved variables and then `environment`,
    serving it `event` once."""
    name = function_name or handler.split(".")[1]
    invocation = Invocation(
        event=event if isinstance(event, bytes) else json.dumps(event).encode(),
        function_name=name,
        timeout_seconds=timeout_seconds,
    )
    api = FakeLambdaRuntimeApi(invocation).start()
    env = {
        **lambda_environment(
            task_root=task_root, handler=handler, function_name=name, memory_mb=memory_mb, runtime_api=api.address
        ),
        "PYTHONPATH": os.pathsep.join([*map(str, layers), *site_packages()]),
        **environment,
    }
    log_path = log_dir / f"{name}-{invocation.request_id}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [python, "-S", "-m", "awslambdaric", handler],
            cwd=task_root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return LambdaRun(
        handler=handler, invocation=invocation, api=api, process=process, log_path=log_path, started=time.monotonic()
    )


@dataclass(frozen=True)
class DeployedFunction:
    """A function as the template deploys it: what a run of its handler is given."""

    logical_id: str
    handler: str
    memory_mb: int
    timeout_seconds: int
    environment: dict[str, str]


def quire_functions(template: Mapping[str, Any]) -> tuple[dict[str, DeployedFunction], set[str]]:
    """The template's functions that run Quire's code, by handler; and the handlers that are not Python's."""
    found: dict[str, DeployedFunction] = {}
    others: set[str] = set()
    for logical_id, resource in template["Resources"].items():
        properties = resource["Properties"]
        if resource["Type"] != "AWS::Lambda::Function" or not str(properties.get("Handler")).startswith("functions"):
            continue  # the CDK's own helpers (bucket notifications, the console's deployment, custom resources)
        handler = properties["Handler"]
        if not str(properties["Runtime"]).startswith("python") or "/" in handler:
            others.add(handler)
            continue
        variables = properties.get("Environment", {}).get("Variables", {})
        found[handler] = DeployedFunction(
            logical_id=logical_id,
            handler=handler,
            memory_mb=int(properties.get("MemorySize", 128)),
            timeout_seconds=int(properties.get("Timeout", 3)),
            environment={
                name: value
                for name, value in variables.items()
                if isinstance(value, str) and name.startswith(KEPT_FROM_TEMPLATE)
            },
        )
    return found, others
