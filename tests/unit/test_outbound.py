"""The rules against server-side request forgery (issue 34's webhooks, shared/domain/outbound.py): a table of hostile
URLs and addresses, each refused naming its rule, and public ones accepted. Pure: nothing is resolved or sent."""

import ipaddress

import pytest

from shared.domain.outbound import OutboundRefused, address_problem, checked_url

HOSTILE_URLS = [
    ("http://hooks.example.com/quire", "scheme"),
    ("ftp://hooks.example.com/", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("gopher://127.0.0.1:6379/_FLUSHALL", "scheme"),
    ("https://user:secret@hooks.example.com/", "credentials"),
    ("https://user@hooks.example.com/", "credentials"),
    ("https:///path-only", "malformed"),
    ("https://hooks.example.com:99999/", "malformed"),
    ("https://hooks.example .com/", "malformed"),
    ("https://hooks.example.com/\x00", "malformed"),
    ("https://" + "a" * 2100 + ".com/", "too-long"),
    ("https://127.0.0.1/", "loopback"),
    ("https://127.1.2.3:8443/", "loopback"),
    ("https://localhost/", "loopback"),
    ("https://[::1]/", "loopback"),
    ("https://10.0.0.5/", "private"),
    ("https://172.16.0.1/", "private"),
    ("https://192.168.1.1/", "private"),
    ("https://100.64.0.1/", "private"),
    ("https://[fc00::1]/", "private"),
    ("https://[fd12:3456::1]/", "private"),
    ("https://169.254.169.254/latest/meta-data/", "metadata"),
    ("https://[fd00:ec2::254]/latest/meta-data/", "metadata"),
    ("https://169.254.10.10/", "link-local"),
    ("https://[fe80::1]/", "link-local"),
    ("https://[fe80::1%25eth0]/", "link-local"),
    ("https://0.0.0.0/", "unspecified"),
    ("https://[::]/", "unspecified"),
    ("https://224.0.0.1/", "multicast"),
    ("https://[ff02::1]/", "multicast"),
    ("https://240.0.0.1/", "private"),
    ("https://255.255.255.255/", "private"),
    # IPv4 inside IPv6: mapped, compatible, 6to4, NAT64.
    ("https://[::ffff:127.0.0.1]/", "loopback"),
    ("https://[::ffff:7f00:1]/", "loopback"),
    ("https://[::ffff:169.254.169.254]/", "metadata"),
    ("https://[::ffff:10.0.0.1]/", "private"),
    ("https://[::10.0.0.1]/", "private"),
    ("https://[2002:7f00:1::]/", "loopback"),
    ("https://[2002:a9fe:a9fe::]/", "metadata"),
    ("https://[64:ff9b::a9fe:a9fe]/", "metadata"),
    ("https://[64:ff9b::10.0.0.1]/", "private"),
    # Numbers in the forms resolvers accept: decimal, hex, octal, short.
    ("https://2130706433/", "numeric-host"),
    ("https://0x7f000001/", "numeric-host"),
    ("https://0x7f.0.0.1/", "numeric-host"),
    ("https://0177.0.0.1/", "numeric-host"),
    ("https://127.1/", "numeric-host"),
    ("https://2852039166/", "numeric-host"),  # 169.254.169.254
    ("https://017700000001/", "numeric-host"),
]


@pytest.mark.parametrize(("url", "rule"), HOSTILE_URLS)
def test_a_hostile_url_is_refused_naming_its_rule(url: str, rule: str) -> None:
    with pytest.raises(OutboundRefused) as refused:
        checked_url(url, allow_plain_http_to_loopback=False)
    assert refused.value.rule == rule, str(refused.value)
    assert str(refused.value)


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/quire?tenant=a",
        "https://hooks.example.com:8443/",
        "https://93.184.216.34/hook",
        "https://[2606:2800:220:1:248:1893:25c8:1946]/hook",
        "https://HOOKS.Example.com./quire",
    ],
)
def test_a_public_https_url_is_a_target(url: str) -> None:
    target = checked_url(url, allow_plain_http_to_loopback=False)
    assert target.scheme == "https" and target.port in (443, 8443) and target.target.startswith("/")


def test_a_name_is_left_to_be_checked_when_resolved_and_an_address_is_checked_now() -> None:
    named = checked_url("https://Hooks.Example.com./x", allow_plain_http_to_loopback=False)
    assert (named.host, named.literal, named.target) == ("hooks.example.com", False, "/x")
    assert checked_url("https://93.184.216.34", allow_plain_http_to_loopback=False).literal


def test_plain_http_goes_to_loopback_only_and_only_where_allowed() -> None:
    local = checked_url("http://127.0.0.1:8080/hook", allow_plain_http_to_loopback=True)
    assert local.plain_http and local.port == 8080
    assert checked_url("http://localhost:9000/", allow_plain_http_to_loopback=True).host == "localhost"
    assert checked_url("http://[::1]:9000/", allow_plain_http_to_loopback=True).port == 9000
    for url in ("http://10.0.0.5/", "http://hooks.example.com/", "http://169.254.169.254/"):
        with pytest.raises(OutboundRefused):
            checked_url(url, allow_plain_http_to_loopback=True)
    with pytest.raises(OutboundRefused) as refused:
        checked_url("http://127.0.0.1:8080/hook", allow_plain_http_to_loopback=False)
    assert refused.value.rule == "scheme"


@pytest.mark.parametrize(
    ("address", "rule"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("::ffff:192.168.0.1", "private"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "private"),  # Teredo, even to a public address: not global
        ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private"),  # Teredo carrying 10.0.0.1
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_a_resolved_address_is_judged_by_what_it_reaches(address: str, rule: str | None) -> None:
    problem = address_problem(ipaddress.ip_address(address))
    assert (problem[0] if problem else None) == rule, problem
