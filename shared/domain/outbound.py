"""Where Quire may send a request it did not choose (issue 34's webhooks): the rules against server-side request
forgery, as pure functions. A URL is refused before anything is resolved when its form breaks a rule; every address
a name resolves to (and the one a connection is then opened to) is refused when it is not a public unicast address.
Each refusal names its rule, for the 400 at registration or the failed delivery.

Not here: resolving names and connecting (an adapter pins the connection to an address these rules accepted, so a
name cannot resolve to a public address when checked and a private one when used).
"""

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_URL_CHARACTERS = 2048
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Cloud instance metadata services beyond what the ranges below already cover (AWS's IPv6 endpoint is in fd00::/8,
# a unique-local range; named for the message).
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")})
# IPv6 ranges that carry an IPv4 address inside: the embedded address is checked too.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT: not public, not is_private
# A host written as a number in a form resolvers accept but people do not read: 2130706433, 0x7f000001, 0177.1,
# 127.1. Refused outright (write the address as four decimal numbers) rather than decoded differently from libc.
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}\.?$", re.IGNORECASE)
_DOTTED_DECIMAL = re.compile(
    r"^(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$"
)


class OutboundRefused(ValueError):
    """A destination Quire will not send to; `rule` names which rule it breaks."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


@dataclass(frozen=True)
class OutboundTarget:
    """A URL that passed the rules of form: where to resolve and connect, and what to request."""

    scheme: str
    host: str  # a name (to resolve, each address then checked) or an address literal (checked already)
    port: int
    target: str  # the path and query, as sent
    literal: bool  # the host is an address, not a name

    @property
    def plain_http(self) -> bool:
        return self.scheme == "http"


def checked_url(
    url: str, *, allow_plain_http_to_loopback: bool, allowed_ports: frozenset[int] | None = None
) -> OutboundTarget:
    """`url` as a destination, or OutboundRefused naming the rule. `https` only, except plain `http` to a loopback
    address or `localhost` when allowed (the local stack allows it; AWS never does). No user name or password in the
    URL: Quire sends no credentials. An address literal is checked here; a name is checked when resolved."""
    if len(url) > MAX_URL_CHARACTERS:
        raise OutboundRefused("too-long", f"the URL is {len(url)} characters; at most {MAX_URL_CHARACTERS} are allowed")
    if any(ord(character) < 0x21 or ord(character) == 0x7F for character in url):
        raise OutboundRefused("malformed", "the URL holds a space or a control character")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise OutboundRefused("malformed", f"the URL cannot be read: {error}") from error
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower().rstrip(".")
    if scheme not in ("https", "http"):
        raise OutboundRefused("scheme", "the URL must start with https://")
    if parts.username is not None or parts.password is not None:
        raise OutboundRefused("credentials", "the URL must not hold a user name or password")
    if not host:
        raise OutboundRefused("malformed", "the URL names no host")
    try:
        host.encode("idna")
    except UnicodeError as error:
        raise OutboundRefused("malformed", f"the URL's host cannot be written as a domain name: {error}") from error
    literal = _address_literal(host)
    loopback = host == "localhost" or (literal is not None and literal.is_loopback)
    if scheme == "http" and not (allow_plain_http_to_loopback and loopback):
        raise OutboundRefused("scheme", "the URL must start with https:// (plain http only to this machine, locally)")
    if literal is not None and not (allow_plain_http_to_loopback and literal.is_loopback):
        problem = address_problem(literal)
        if problem is not None:
            raise OutboundRefused(problem[0], f"the URL's address {literal} is {problem[1]}")
    if host == "localhost" and not allow_plain_http_to_loopback:
        raise OutboundRefused("loopback", "the URL names this machine (localhost)")
    effective_port = port or (443 if scheme == "https" else 80)
    if (
        allowed_ports is not None
        and effective_port not in allowed_ports
        and not (allow_plain_http_to_loopback and loopback)
    ):
        allowed = ", ".join(str(p) for p in sorted(allowed_ports))
        raise OutboundRefused("port", f"the URL's port {effective_port} is not one webhooks are sent to ({allowed})")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return OutboundTarget(
        scheme=scheme,
        host=host,
        port=port or (443 if scheme == "https" else 80),
        target=target,
        literal=literal is not None,
    )


def _address_literal(host: str) -> IPAddress | None:
    """The address a host names by itself, or None for a name; OutboundRefused for a number in a form other
    than four decimal numbers."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError as error:
            raise OutboundRefused("malformed", f"the URL's IPv6 address {host} cannot be read") from error
    if _DOTTED_DECIMAL.fullmatch(host):
        return ipaddress.IPv4Address(host)
    if _NUMERIC_HOST.fullmatch(host):
        raise OutboundRefused(
            "numeric-host",
            f"the URL's host {host} is a number in another form: write an address as four decimal numbers",
        )
    return None


# In order: the first that holds names the problem.
_ADDRESS_RULES: tuple[tuple[str, str, Callable[[IPAddress], bool]], ...] = (
    ("metadata", "the instance metadata service", lambda a: a in METADATA_ADDRESSES),
    ("loopback", "this machine (loopback)", lambda a: a.is_loopback),
    ("link-local", "link-local", lambda a: a.is_link_local),
    ("unspecified", "unspecified", lambda a: a.is_unspecified),
    ("multicast", "multicast", lambda a: a.is_multicast),
    (
        "private",
        "in the shared address space (carrier-grade NAT)",
        lambda a: isinstance(a, ipaddress.IPv4Address) and a in _SHARED_ADDRESS_SPACE,
    ),
    (
        "private",
        "private or reserved, not on the internet",
        lambda a: a.is_private or a.is_reserved or not a.is_global,
    ),
)


def address_problem(address: IPAddress) -> tuple[str, str] | None:
    """(rule, what the address is) when a request must not go to `address`, else None: only public unicast
    addresses are allowed. An IPv6 address carrying an IPv4 one (mapped, compatible, 6to4, NAT64, Teredo) is judged
    by the IPv4 one first."""
    if isinstance(address, ipaddress.IPv6Address) and address not in METADATA_ADDRESSES:
        for embedded in _embedded_ipv4(address):
            problem = address_problem(embedded)
            if problem is not None:
                return problem[0], f"{problem[1]} ({embedded}, inside an IPv6 address)"
    return next(((rule, what) for rule, what, holds in _ADDRESS_RULES if holds(address)), None)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    embedded = []
    if address.ipv4_mapped is not None:
        embedded.append(address.ipv4_mapped)
    if address.sixtofour is not None:
        embedded.append(address.sixtofour)
    if address.teredo is not None:
        embedded.append(address.teredo[1])
    if address in _NAT64 or address in _NAT64_LOCAL:
        embedded.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    # ::a.b.c.d (IPv4-compatible, deprecated but still routed by some stacks)
    if int(address) >> 32 == 0 and int(address) > 1:
        embedded.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    return embedded
