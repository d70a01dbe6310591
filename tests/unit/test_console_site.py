"""The local stack's console site: its files under a strict policy, and a sign-in no other site or host can use."""

import json
from typing import Any

import pytest

from shared.adapters.local.jwt_tokens import LocalTokenIssuer, LocalTokenVerifier
from shared.domain.auth import principal_from_claims
from shared.local.console_site import CONSOLE_DIRECTORY, SIGN_IN_PATH, ConsoleSite

SECRET = b"a-test-secret-of-at-least-32-bytes!!"
STORE = "http://127.0.0.1:9000"
HOST = "127.0.0.1:8080"
KEY = "the-stacks-own-sign-in-key-0123456789"


@pytest.fixture
def site() -> ConsoleSite:
    return ConsoleSite(LocalTokenIssuer(SECRET), store_origin=STORE, sign_in_key=KEY)


def headers_of(answer: tuple[int, list[tuple[str, str]], bytes]) -> dict[str, str]:
    return dict(answer[1])


def sign_in(
    site: ConsoleSite,
    body: object | None = None,
    *,
    source: str = "127.0.0.1",
    host: str = HOST,
    origin: str | None = f"http://{HOST}",
    method: str = "POST",
    content_type: str = "application/json",
    key: str | None = KEY,
) -> tuple[int, dict[str, Any]]:
    """A sign-in request as a browser on `source` sends it; `key` None sends none."""
    headers = [("Host", host), ("Content-Type", content_type)]
    if origin is not None:
        headers.append(("Origin", origin))
    asked = dict(body or {}) if isinstance(body, dict | None) else body
    if key is not None and isinstance(asked, dict):
        asked["key"] = key
    payload = json.dumps(asked).encode()
    status, _, answer = site.serve(method, SIGN_IN_PATH, headers, payload, source)
    return status, json.loads(answer)


def test_every_file_is_served_with_a_policy_that_forbids_inline_script(site: ConsoleSite) -> None:
    for name in ("index.html", "app.js", "app.css"):
        status, headers, body = site.serve("GET", f"/console/{name}", [("Host", HOST)], b"", "127.0.0.1")
        assert status == 200 and body == (CONSOLE_DIRECTORY / name).read_bytes()
        policy = dict(headers)["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "style-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert f"connect-src 'self' {STORE}" in policy and "frame-ancestors 'none'" in policy
        assert dict(headers)["X-Content-Type-Options"] == "nosniff"


def test_the_page_carries_no_inline_script_or_style() -> None:
    # The policy would refuse them; the page must not need them.
    page = (CONSOLE_DIRECTORY / "index.html").read_text()
    assert "<script>" not in page and "<style" not in page and "style=" not in page and " on" not in page.lower()
    assert '<script type="module" src="app.js"></script>' in page


def test_console_without_its_slash_redirects_so_relative_files_resolve(site: ConsoleSite) -> None:
    status, headers, _ = site.serve("GET", "/console", [], b"", "127.0.0.1")
    assert status == 308 and dict(headers)["Location"] == "/console/"
    assert site.serve("GET", "/console/", [], b"", "127.0.0.1")[2] == (CONSOLE_DIRECTORY / "index.html").read_bytes()


@pytest.mark.parametrize(
    "path",
    ["/console/../shared/cli.py", "/console/%2e%2e/pyproject.toml", "/console/missing.js", "/console//etc/passwd"],
)
def test_nothing_but_the_listed_files_is_served(site: ConsoleSite, path: str) -> None:
    assert site.serve("GET", path, [], b"", "127.0.0.1")[0] == 404


def test_the_local_config_names_the_local_sign_in(site: ConsoleSite) -> None:
    status, _, body = site.serve("GET", "/console/config.json", [], b"", "127.0.0.1")
    assert status == 200
    assert json.loads(body) == {"apiBase": "", "auth": {"kind": "local", "signIn": SIGN_IN_PATH}}


def test_a_loopback_sign_in_gets_a_token_the_api_accepts_with_the_roles_asked_for(site: ConsoleSite) -> None:
    status, body = sign_in(site, {"collections": ["docs", "hr"], "role": "write"})
    assert status == 200
    principal = principal_from_claims(LocalTokenVerifier(SECRET).verify(body["token"]))
    assert principal.tenant_id == "local"
    assert principal.roles() == {"docs": "write", "hr": "write"}


@pytest.mark.parametrize(
    ("source", "host", "origin"),
    [
        ("10.0.0.7", HOST, f"http://{HOST}"),  # another machine
        ("127.0.0.1", "evil.example:8080", "http://evil.example:8080"),  # a DNS-rebinding page names its own host
        ("127.0.0.1", HOST, "http://evil.example"),  # another site's page posting here
        ("127.0.0.1", HOST, "null"),  # a sandboxed or file: page
        ("::ffff:10.0.0.7", HOST, None),
    ],
    ids=["remote", "rebinding", "cross-site", "opaque-origin", "mapped-remote"],
)
def test_a_sign_in_from_anywhere_but_this_machines_own_page_does_not_exist(
    site: ConsoleSite, source: str, host: str, origin: str | None
) -> None:
    status, body = sign_in(site, {"collections": ["docs"]}, source=source, host=host, origin=origin)
    assert status == 404
    assert "token" not in body


@pytest.mark.parametrize(
    "key", ["", "not-the-key", None, KEY[:-1], KEY + "x"], ids=["empty", "wrong", "none", "short", "long"]
)
def test_a_sign_in_without_the_stacks_key_is_refused_however_local_it_is(site: ConsoleSite, key: str | None) -> None:
    # Another user of the machine reaches the loopback port but cannot read .quire/, where the key is
    status, reply = sign_in(site, {"collections": ["docs"]}, origin=None, key=key)
    assert status == 403
    assert "token" not in reply and "quire up" in reply["message"]


def test_a_sign_in_without_origin_from_loopback_works_as_a_cli_would(site: ConsoleSite) -> None:
    assert sign_in(site, origin=None)[0] == 200
    assert sign_in(site, origin=None, host="[::1]:8080", source="::1")[0] == 200


@pytest.mark.parametrize(
    ("body", "content_type", "method", "status"),
    [
        ({"collections": ["bad id!"]}, "application/json", "POST", 400),
        ({"collections": "docs"}, "application/json", "POST", 400),
        ({"collections": [f"c{n}" for n in range(21)]}, "application/json", "POST", 400),
        ({"role": "owner"}, "application/json", "POST", 400),
        ({}, "text/plain", "POST", 415),
        ({}, "application/json", "GET", 405),
    ],
    ids=["bad-id", "not-a-list", "too-many", "unknown-role", "form-post", "get"],
)
def test_a_bad_sign_in_is_refused_with_its_reason(
    site: ConsoleSite, body: object, content_type: str, method: str, status: int
) -> None:
    answered, reply = sign_in(site, body, content_type=content_type, method=method)
    assert answered == status
    assert "token" not in reply and reply["message"]
