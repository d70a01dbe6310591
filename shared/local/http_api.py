"""The local HTTP API: real HTTP in, API Gateway HTTP API (payload 2.0) events out, same Lambda handler.

It plays API Gateway's part: the JWT authorizer (verify the bearer token, hand the claims to the
function as strings, answer 401 itself when a protected route gets no valid token) and the payload
limit. Everything else is the handler's business, exactly as on AWS.

The console's static files (/console) are served here as CloudFront serves them from S3 on AWS
(shared/local/console_site.py).

Paths another function serves over HTTP on AWS (the MCP endpoint, behind the Lambda Web Adapter) are forwarded
as they are to the local server standing in for it (`Forwarding`), with no JWT check: that server is its own
OAuth resource server, as the MCP route has no gateway authorizer.
"""

import base64
import http.client
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from shared.domain.errors import Unauthenticated
from shared.ports import TokenVerifier

if TYPE_CHECKING:
    from shared.local.console_site import ConsoleSite

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
# API Gateway refuses request bodies over 10 MB; Lambda's synchronous payload limit is 6 MB.
MAX_REQUEST_BYTES = 6 * 1024 * 1024
_TEXT_TYPES = ("application/json", "text/", "application/x-www-form-urlencoded")
# C0 and C1 control characters written as \xNN, as CPython's own log_message does: a request line is the
# caller's bytes, and an ESC sequence in it must not reach a terminal reading the log.
_CONTROL_CHARACTERS = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0))}
_log = logging.getLogger(__name__)


@dataclass
class LocalLambdaContext:
    """The attributes of Lambda's context object that powertools and handlers read."""

    function_name: str = "quire-api-local"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:000000000000:function:quire-api-local"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/quire/local/api"
    log_stream_name: str = "local"
    _deadline: float = field(default_factory=lambda: time.monotonic() + 29)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


# Headers about one connection, never passed on by a proxy (RFC 9110 §7.6.1); the length is set again for the hop.
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "content-length"}
)
_BAD_GATEWAY = (502, [("content-type", "application/json")], b'{"message":"Bad Gateway"}')


# How long the server behind keeps an idle connection open (uvicorn's timeout_keep_alive, set by
# shared/local/mcp_server.py), and how long one is reused after its last answer: well inside it, so a reused
# connection is never one the server is closing (a request on it is never sent twice).
FORWARDED_KEEP_ALIVE_SECONDS = 5
REUSE_IDLE_SECONDS = 2.0


@dataclass(frozen=True)
class Forwarding:
    """Paths (each with everything under it) another local HTTP server answers: method, target, headers and body
    passed to it as they came; its status, headers and body passed back. Each thread of the API (one per client
    connection) keeps its connection to the server behind while it is used, as a client keeps its own: a new one
    per request cost about 1.4 ms of CPU of an MCP call's 5.6 (docs/benchmarks.md#agent-tools-over-mcp)."""

    paths: tuple[str, ...]
    host: str
    port: int
    # API Gateway's integration timeout.
    timeout_seconds: float = 29
    _kept: threading.local = field(default_factory=threading.local, init=False, compare=False, repr=False)

    def matches(self, path: str) -> bool:
        return any(path == prefix or path.startswith(f"{prefix}/") for prefix in self.paths)

    def _connection(self) -> http.client.HTTPConnection:
        kept: tuple[http.client.HTTPConnection, float] | None = getattr(self._kept, "connection", None)
        self._kept.connection = None
        if kept is not None:
            connection, last_used = kept
            if time.monotonic() - last_used < REUSE_IDLE_SECONDS:
                return connection
            connection.close()
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_seconds)

    def send(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        connection = self._connection()
        try:
            # The caller's Host goes on as it was sent: the server behind checks it (421 for one it does not serve).
            connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                if name.lower() not in _HOP_BY_HOP:
                    connection.putheader(name, value)
            if body or method in {"POST", "PUT", "PATCH"}:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body or None)
            response = connection.getresponse()
            payload = response.read()
            passed = [(name, value) for name, value in response.getheaders() if name.lower() not in _HOP_BY_HOP]
        except (OSError, http.client.HTTPException):
            _log.exception("the server behind %s did not answer", self.paths)
            connection.close()
            return _BAD_GATEWAY
        except BaseException:
            # A header http.client refuses (ValueError) or anything else: this connection is not reused.
            connection.close()
            raise
        if response.will_close:
            connection.close()
        else:
            self._kept.connection = (connection, time.monotonic())
        return response.status, passed, payload


def body_refusal(content_lengths: list[str], transfer_encodings: list[str]) -> tuple[int, str] | None:
    """Why a request's framing is refused (status, message), or None when its body can be read safely.

    Exactly one non-negative Content-Length within the payload limit; no chunked bodies (API Gateway
    would buffer them, a local adapter that ignored the header would read the body as a new request).
    """
    if transfer_encodings:
        return 411, "Send the body with a Content-Length; Transfer-Encoding is not accepted"
    if len(content_lengths) > 1:
        return 400, "More than one Content-Length header"
    raw = content_lengths[0].strip() if content_lengths else "0"
    if not (raw.isascii() and raw.isdigit()):  # "²".isdigit() is true, int("²") is not
        return 400, "Content-Length must be a non-negative integer"
    if int(raw) > MAX_REQUEST_BYTES:
        return 413, f"Request body over the {MAX_REQUEST_BYTES} byte limit"
    return None


def build_http_v2_event(
    *,
    method: str,
    target: str,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    source_ip: str,
    claims: Mapping[str, object] | None,
) -> dict[str, Any]:
    """An API Gateway HTTP API payload-2.0 event for one real request."""
    parts = urlsplit(target)
    lowered: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        lowered[key] = f"{lowered[key]},{value}" if key in lowered else value
    cookies = [c.strip() for c in lowered.pop("cookie", "").split(";") if c.strip()]
    query: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    content_type = lowered.get("content-type", "")
    is_text = any(content_type.startswith(kind) for kind in _TEXT_TYPES)
    now = datetime.now(UTC)
    request_id = str(uuid.uuid4())
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": parts.path,
        "rawQueryString": parts.query,
        "headers": lowered,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": lowered.get("host", "127.0.0.1"),
            "domainPrefix": lowered.get("host", "127.0.0.1").split(".")[0],
            "http": {
                "method": method,
                "path": parts.path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": request_id,
            "routeKey": "$default",
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = query
    if claims is not None:
        event["requestContext"]["authorizer"] = {"jwt": {"claims": dict(claims), "scopes": None}}
    if body:
        if is_text:
            event["body"] = body.decode("utf-8", errors="replace")
        else:
            event["body"] = base64.b64encode(body).decode("ascii")
            event["isBase64Encoded"] = True
    return event


class LocalHttpApi:
    def __init__(
        self,
        handler: LambdaHandler,
        verifier: TokenVerifier,
        *,
        public_routes: frozenset[tuple[str, str]],
        port: int,
        forwarding: Forwarding | None = None,
        console: "ConsoleSite | None" = None,
    ) -> None:
        self._handler = handler
        self._verifier = verifier
        self._public_routes = public_routes
        self._port = port
        self._forwarding = forwarding
        self._console = console
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the local API is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), self._request_handler_class())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="quire-local-api", daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def authorize(self, method: str, path: str, authorization: str | None) -> Mapping[str, object] | None:
        """Claims for the request, None for a public route without a token; raises for a refused one."""
        if authorization is None or not authorization.lower().startswith("bearer "):
            if (method, path) in self._public_routes:
                return None
            raise Unauthenticated("missing bearer token")
        return self._verifier.verify(authorization[7:].strip())

    def invoke(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes, source_ip: str
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        headers = list(headers)
        path = urlsplit(target).path
        if self._forwarding is not None and self._forwarding.matches(path):
            return self._forwarding.send(method, target, headers, body)
        if self._console is not None and self._console.matches(path):
            return self._console.serve(method, path, headers, body, source_ip)
        # Header names are case-insensitive; take the first Authorization, as API Gateway does.
        authorization = next((value for name, value in headers if name.lower() == "authorization"), None)
        try:
            claims = self.authorize(method, path, authorization)
        except Unauthenticated:
            return (
                401,
                [("content-type", "application/json"), ("www-authenticate", "Bearer")],
                json.dumps({"message": "Unauthorized"}).encode(),
            )
        event = build_http_v2_event(
            method=method, target=target, headers=headers, body=body, source_ip=source_ip, claims=claims
        )
        try:
            result = self._handler(event, LocalLambdaContext())
        except Exception:
            _log.exception("handler raised")
            return 500, [("content-type", "application/json")], b'{"message":"Internal Server Error"}'
        return _response_from_result(result)

    def _request_handler_class(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "quire-local"
            # The headers and the body are two writes: with Nagle's algorithm the body waited for the client's
            # delayed ACK of the headers, about 40 ms of every answer on a kept-alive connection.
            disable_nagle_algorithm = True

            def _serve(self) -> None:
                refusal = body_refusal(
                    self.headers.get_all("Content-Length") or [], self.headers.get_all("Transfer-Encoding") or []
                )
                if refusal is not None:
                    status, message = refusal
                    self._send(
                        status, [("content-type", "application/json")], json.dumps({"message": message}).encode()
                    )
                    # The rest of the stream cannot be trusted to be the next request.
                    self.close_connection = True
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                status, headers, payload = api.invoke(
                    self.command, self.path, list(self.headers.items()), body, self.client_address[0]
                )
                self._send(status, headers, payload)

            def _send(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
                self.send_response(status)
                for name, value in headers:
                    if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:
                _log.info("%s %s", self.address_string(), (format % args).translate(_CONTROL_CHARACTERS))

        return RequestHandler


def _response_from_result(result: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    status = int(result.get("statusCode", 200))
    headers = [(name, str(value)) for name, value in (result.get("headers") or {}).items()]
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers.extend((name, str(value)) for value in values)
    headers.extend(("set-cookie", cookie) for cookie in result.get("cookies") or [])
    raw = result.get("body") or ""
    payload = base64.b64decode(raw) if result.get("isBase64Encoded") else str(raw).encode("utf-8")
    return status, headers, payload
