"""WebhookSender: one POST to a URL Quire did not choose, under the rules of shared/domain/outbound.py.

The name is resolved here, every address it resolves to is checked, and the connection is opened to one of those
checked addresses (pinned: the name is not resolved again by the socket layer, so it cannot answer a public address
to the check and a private one to the connection). TLS verifies the certificate against the name. No redirect is
followed (http.client follows none), no proxy is used, nothing but the given headers is sent, the whole exchange is
cut at TIMEOUT_SECONDS, and at most MAX_RESPONSE_BYTES of the answer are read.
"""

import contextlib
import http.client
import io
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared.domain.outbound import IPAddress, OutboundRefused, OutboundTarget, address_problem, checked_url
from shared.domain.webhooks import MAX_RESPONSE_BYTES, TIMEOUT_SECONDS, SendOutcome
from shared.ports import WebhookSender

Resolver = Callable[[str, int], list[IPAddress]]
# Opens the TCP connection to an address already checked: (address, port), timeout.
Connector = Callable[[tuple[str, int], float], socket.socket]
USER_AGENT = "Quire-Webhooks/1"


def system_resolver(host: str, port: int) -> list[IPAddress]:
    """Every address the system resolver gives for `host` (no connection is made)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    seen: dict[IPAddress, None] = {}
    for info in infos:
        seen[ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])] = None
    return list(seen)


def tls_context(extra_ca_file: Path | None = None) -> ssl.SSLContext:
    """The system's trust store, plus `extra_ca_file` (locally: a receiver's self-signed certificate)."""
    context = ssl.create_default_context()
    if extra_ca_file is not None:
        context.load_verify_locations(cafile=str(extra_ca_file))
    return context


def _connect(address: tuple[str, int], timeout: float) -> socket.socket:
    return socket.create_connection(address, timeout=timeout)


class _Budget(io.RawIOBase):
    """The answer's bytes from the socket, up to a budget: past it, the answer ends (status line and headers
    included, so a server cannot make the sender read megabytes of headers)."""

    def __init__(self, sock: socket.socket, budget: int) -> None:
        self._sock = sock
        self._left = budget

    @property
    def spent(self) -> bool:
        return self._left <= 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._left <= 0:
            return 0
        view = memoryview(buffer)[: self._left]
        read = self._sock.recv_into(view)
        self._left -= read
        return read


class _BoundedResponse(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        # The socket's own file, made by HTTPResponse, is kept (unread) until the answer is closed: while it is open
        # the connection's close does not close the socket under the budget's reads.
        self._socket_file = self.fp
        self.budget = _Budget(sock, MAX_RESPONSE_BYTES)
        self.fp = io.BufferedReader(self.budget)

    def close(self) -> None:
        super().close()
        self._socket_file.close()


class _PinnedConnection(http.client.HTTPSConnection):
    """An HTTP(S) connection whose Host header and certificate check use the URL's name, opened to `address`; its
    answer is read through a budget of MAX_RESPONSE_BYTES."""

    response_class = _BoundedResponse

    def __init__(
        self,
        target: OutboundTarget,
        address: IPAddress,
        *,
        context: ssl.SSLContext,
        timeout: float,
        connect: Connector,
    ) -> None:
        super().__init__(target.host, target.port, timeout=timeout, context=context)
        self._address = address
        self._connect = connect
        self._plain = target.plain_http
        self._context = context

    def connect(self) -> None:
        self.sock = self._connect((str(self._address), self.port), self.timeout or TIMEOUT_SECONDS)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if not self._plain:
            self.sock = self._context.wrap_socket(self.sock, server_hostname=self.host)
        self._opened = self.sock

    def cut(self) -> None:
        """End the exchange now, from another thread: a shutdown wakes any read or write blocked on the socket
        (closing it would not, while the answer's reader holds it; and the connection may have let go of it)."""
        sock = getattr(self, "_opened", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)


class PinnedHttpSender(WebhookSender):
    def __init__(
        self,
        *,
        allow_loopback: bool,
        resolve: Resolver | None = None,
        context: ssl.SSLContext | None = None,
        timeout_seconds: float = TIMEOUT_SECONDS,
        connect: Connector | None = None,
        allowed_ports: frozenset[int] | None = None,
    ) -> None:
        """`allow_loopback`: the local stack's receivers on this machine (plain http or https to loopback); never
        on AWS. `resolve` and `connect` default to the system's (looked up when used). `allowed_ports`: the only
        ports a URL may name (on AWS, 443: nothing else leaves the delivery function's network), None for any."""
        self._allowed_ports = allowed_ports
        self._allow_loopback = allow_loopback
        self._resolve = resolve
        self._context = context or tls_context()
        self._timeout = timeout_seconds
        self._connect = connect

    def _addresses(self, target: OutboundTarget) -> list[IPAddress]:
        if target.literal:
            addresses = [ipaddress.ip_address(target.host.split("%", 1)[0])]
        else:
            try:
                addresses = (self._resolve or system_resolver)(target.host, target.port)
            except (OSError, UnicodeError) as error:
                raise OutboundRefused("unresolvable", f"the name {target.host} does not resolve: {error}") from error
            if not addresses:
                raise OutboundRefused("unresolvable", f"the name {target.host} resolves to no address")
        for address in addresses:
            if self._allow_loopback and address.is_loopback:
                continue
            problem = address_problem(address)
            if problem is not None:
                # Not which address: the refusal must not tell a tenant what a name resolves to inside the network.
                raise OutboundRefused(
                    problem[0], f"{target.host} resolves to an address that is {_without_address(problem[1])}"
                )
        return addresses

    def _checked(self, url: str) -> OutboundTarget:
        return checked_url(url, allow_plain_http_to_loopback=self._allow_loopback, allowed_ports=self._allowed_ports)

    def check_destination(self, url: str) -> None:
        self._addresses(self._checked(url))

    def send(self, url: str, headers: dict[str, str], body: bytes) -> SendOutcome:
        try:
            target = self._checked(url)
            addresses = self._addresses(target)
        except OutboundRefused as refused:
            return SendOutcome(
                delivered=False, error=f"refused by the rule '{refused.rule}': {refused}", refused_rule=refused.rule
            )
        errors = []
        # One bound for the whole exchange, whatever addresses it tries: the watchdog's cut ends any call blocked on it.
        deadline = time.monotonic() + self._timeout
        for address in addresses:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            connection = _PinnedConnection(
                target, address, context=self._context, timeout=remaining, connect=self._connect or _connect
            )
            watchdog = threading.Timer(remaining, connection.cut)
            watchdog.daemon = True
            watchdog.start()
            try:
                try:
                    connection.connect()
                except OSError as error:  # refused, unreachable (an IPv6 address on an IPv4 network), TLS refused
                    if not watchdog.is_alive():
                        break
                    errors.append(f"{address}: {type(error).__name__}: {error}")
                    continue  # the next checked address may answer
                return _exchange(connection, target, headers, body)
            except (OSError, http.client.HTTPException, ValueError) as error:
                if not watchdog.is_alive():
                    return SendOutcome(delivered=False, error=f"no answer within {self._timeout:g} s")
                return SendOutcome(delivered=False, error=f"the request failed: {type(error).__name__}: {error}"[:500])
            finally:
                watchdog.cancel()
                connection.close()
        if not errors:
            return SendOutcome(delivered=False, error=f"no answer within {self._timeout:g} s")
        return SendOutcome(delivered=False, error=f"no connection: {'; '.join(errors)}"[:500])


def _exchange(
    connection: "_PinnedConnection", target: OutboundTarget, headers: dict[str, str], body: bytes
) -> SendOutcome:
    """The POST on a connection made, and what its answer says (read through the budget)."""
    connection.request(
        "POST",
        target.target,
        body=body,
        headers={**headers, "Content-Type": "application/json", "User-Agent": USER_AGENT},
    )
    response = connection.getresponse()
    if isinstance(response, _BoundedResponse) and response.budget.spent:
        return SendOutcome(
            delivered=False,
            status=response.status,
            error=f"the answer's status line and headers passed {MAX_RESPONSE_BYTES // 1024} KiB",
        )
    response.read(MAX_RESPONSE_BYTES)
    return _outcome(response.status)


def _without_address(what: str) -> str:
    """The address problem's words without the embedded address it names ("... (10.0.0.1, inside an IPv6 address)")."""
    return what.split(" (", 1)[0]


def _outcome(status: int) -> SendOutcome:
    if 200 <= status < 300:
        return SendOutcome(delivered=True, status=status)
    if 300 <= status < 400:
        return SendOutcome(
            delivered=False, status=status, error=f"the endpoint answered {status}: redirects are not followed"
        )
    return SendOutcome(delivered=False, status=status, error=f"the endpoint answered {status}")
