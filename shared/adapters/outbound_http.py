"""WebhookSender: one POST to a URL Quire did not choose, under the rules of shared/domain/outbound.py.

The name is resolved here, every address it resolves to is checked, and the connection is opened to one of those
checked addresses (pinned: the name is not resolved again by the socket layer, so it cannot answer a public address
to the check and a private one to the connection). TLS verifies the certificate against the name. No redirect is
followed (http.client follows none), no proxy is used, nothing but the given headers is sent, the whole exchange is
cut at TIMEOUT_SECONDS, and at most MAX_RESPONSE_BYTES of the answer are read.
"""

import http.client
import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path

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


class _PinnedConnection(http.client.HTTPSConnection):
    """An HTTP(S) connection whose Host header and certificate check use the URL's name, opened to `address`."""

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
            except OSError as error:
                raise OutboundRefused("unresolvable", f"the name {target.host} does not resolve: {error}") from error
            if not addresses:
                raise OutboundRefused("unresolvable", f"the name {target.host} resolves to no address")
        for address in addresses:
            if self._allow_loopback and address.is_loopback:
                continue
            problem = address_problem(address)
            if problem is not None:
                raise OutboundRefused(problem[0], f"{target.host} resolves to {address}, {problem[1]}")
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
        # One bound for the whole exchange, whatever addresses it tries: closing the socket ends any call blocked on it.
        deadline = time.monotonic() + self._timeout
        for address in addresses:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            connection = _PinnedConnection(
                target, address, context=self._context, timeout=remaining, connect=self._connect or _connect
            )
            watchdog = threading.Timer(remaining, connection.close)
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
                connection.request(
                    "POST",
                    target.target,
                    body=body,
                    headers={**headers, "Content-Type": "application/json", "User-Agent": USER_AGENT},
                )
                response = connection.getresponse()
                response.read(MAX_RESPONSE_BYTES)
                return _outcome(response.status)
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


def _outcome(status: int) -> SendOutcome:
    if 200 <= status < 300:
        return SendOutcome(delivered=True, status=status)
    if 300 <= status < 400:
        return SendOutcome(
            delivered=False, status=status, error=f"the endpoint answered {status}: redirects are not followed"
        )
    return SendOutcome(delivered=False, status=status, error=f"the endpoint answered {status}")
