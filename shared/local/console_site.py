"""The browser console (console/ at the repository root) on the local stack, at /console on the API's origin.

On AWS the same files are served by CloudFront from S3 (infra/constructs/console.py), with the same
Content-Security-Policy. The page holds no data: every call it makes carries the caller's bearer token, so
/console is a public path, as /v1/health is.

Locally the console can also sign in with one click (`POST /console/local-sign-in`): a token for the local
tenant, minted with the stack's own key. It is offered only where it cannot be reached from elsewhere: the
request must come from a loopback address, name a loopback host (a DNS-rebinding page names its own), and,
when the browser says where the page that sent it lives (Origin), be from this very origin (no other site's
page can sign a visitor in); anywhere else it answers 404, as if it did not exist. And it must carry the
stack's sign-in key (`.quire/console-sign-in.key`, in the address `quire up` prints): loopback is not a user
boundary, and another user of the machine, who cannot read `.quire/`, must not get the token `quire token`
would refuse them.
"""

import hmac
import ipaddress
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

from shared.adapters.local.jwt_tokens import LocalTokenIssuer
from shared.domain.auth import Principal, Role, with_role

CONSOLE_PATH = "/console"
SIGN_IN_PATH = f"{CONSOLE_PATH}/local-sign-in"
CONSOLE_DIRECTORY = Path(__file__).resolve().parents[2] / "console"
LOCAL_TENANT = "local"
LOCAL_SUBJECT = "console"
SIGN_IN_LIFETIME_SECONDS = 8 * 3600
MAX_SIGN_IN_COLLECTIONS = 20
MAX_SIGN_IN_BYTES = 4096
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
}
SIGN_IN_KEY_NEEDED = (
    "The one-click sign-in needs the stack's sign-in key: open the console at the address `quire up` prints"
    " (or paste a token from `quire token`)"
)
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})  # as urlsplit gives them: [::1] → ::1

Answer = tuple[int, list[tuple[str, str]], bytes]


def content_security_policy(store_origin: str) -> str:
    """No inline script or style, nothing from elsewhere but the object store: presigned uploads go to it
    (connect-src), page images come from it (img-src) and so does a cited recording (media-src)."""
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            f"img-src 'self' blob: {store_origin}",
            f"media-src 'self' blob: {store_origin}",
            f"connect-src 'self' {store_origin}",
            "form-action 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        )
    )


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


class ConsoleSite:
    """The console's files, its config.json (the local stack's: same origin, local sign-in) and the sign-in."""

    def __init__(
        self, issuer: LocalTokenIssuer, *, store_origin: str, sign_in_key: str, directory: Path = CONSOLE_DIRECTORY
    ) -> None:
        self._issuer = issuer
        self._sign_in_key = sign_in_key.encode()
        # The files are listed once: a request names one of them or nothing (no path is ever joined).
        self._files = {
            path.name: path for path in sorted(directory.iterdir()) if path.is_file() and path.suffix in _CONTENT_TYPES
        }
        self._headers = [
            ("Content-Security-Policy", content_security_policy(store_origin)),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
            ("X-Frame-Options", "DENY"),
            ("Cross-Origin-Opener-Policy", "same-origin"),
            ("Cache-Control", "no-cache"),
        ]

    @staticmethod
    def matches(path: str) -> bool:
        return path == CONSOLE_PATH or path.startswith(f"{CONSOLE_PATH}/")

    def serve(self, method: str, path: str, headers: Iterable[tuple[str, str]], body: bytes, source_ip: str) -> Answer:
        lowered = {name.lower(): value for name, value in headers}
        if path == SIGN_IN_PATH:
            return self._sign_in(method, lowered, body, source_ip)
        if method not in ("GET", "HEAD"):
            return self._json(405, {"message": "The console's files are read with GET"}, [("Allow", "GET, HEAD")])
        if path == CONSOLE_PATH:
            # Its files are named relative to /console/: without the slash, app.js would resolve to /app.js.
            return 308, [*self._headers, ("Location", f"{CONSOLE_PATH}/")], b""
        name = path[len(CONSOLE_PATH) + 1 :] or "index.html"
        if name == "config.json":
            return self._json(200, {"apiBase": "", "auth": {"kind": "local", "signIn": SIGN_IN_PATH}})
        found = self._files.get(name)
        if found is None:
            return self._json(404, {"message": "Not found"})
        return 200, [*self._headers, ("Content-Type", _CONTENT_TYPES[found.suffix])], found.read_bytes()

    def _sign_in(self, method: str, headers: Mapping[str, str], body: bytes, source_ip: str) -> Answer:
        refused = self._refusal(method, headers, body, source_ip)
        if refused is not None:
            return refused
        try:
            asked = json.loads(body or b"{}")
            if not isinstance(asked, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as error:
            return self._json(400, {"message": f"The sign-in was refused: {error}"})
        key = asked.get("key")
        if not isinstance(key, str) or not hmac.compare_digest(key.encode(), self._sign_in_key):
            return self._json(403, {"message": SIGN_IN_KEY_NEEDED})
        try:
            principal = _principal_asked(asked)
        except (ValueError, AttributeError) as error:
            return self._json(400, {"message": f"The sign-in was refused: {error}"})
        token = self._issuer.issue(principal, lifetime_seconds=SIGN_IN_LIFETIME_SECONDS)
        return self._json(
            200,
            {"token": token, "tenantId": LOCAL_TENANT, "subject": LOCAL_SUBJECT, "expiresIn": SIGN_IN_LIFETIME_SECONDS},
            [("Cache-Control", "no-store")],
        )

    def _refusal(self, method: str, headers: Mapping[str, str], body: bytes, source_ip: str) -> Answer | None:
        """Why the request is not a sign-in to answer: from elsewhere (404, as if there were none), or framed
        as no sign-in is."""
        host = headers.get("host", "")
        hostname = urlsplit(f"//{host}").hostname or ""
        same_origin = headers.get("origin") in (None, f"http://{host}")
        if not (_is_loopback(source_ip) and hostname in _LOOPBACK_HOSTS and same_origin):
            return self._json(404, {"message": "Not found"})
        if method != "POST":
            return self._json(405, {"message": "Sign in with POST"}, [("Allow", "POST")])
        if not headers.get("content-type", "").startswith("application/json"):
            return self._json(415, {"message": "Send the sign-in as application/json"})
        if len(body) > MAX_SIGN_IN_BYTES:
            return self._json(413, {"message": f"A sign-in is at most {MAX_SIGN_IN_BYTES} bytes"})
        return None

    def _json(self, status: int, body: object, extra: Iterable[tuple[str, str]] = ()) -> Answer:
        headers = [*self._headers, *extra, ("Content-Type", "application/json")]
        if any(name == "Cache-Control" for name, _ in extra):
            headers = [(name, value) for name, value in headers if (name, value) != ("Cache-Control", "no-cache")]
        return status, headers, json.dumps(body).encode()


def _principal_asked(asked: Mapping[str, object]) -> Principal:
    """The local tenant's caller with the role asked for in the collections asked for (ValueError naming why not)."""
    collections = asked.get("collections") or ["default"]
    role = Role(str(asked.get("role", Role.ADMIN.value)))
    if not isinstance(collections, list) or not all(isinstance(name, str) for name in collections):
        raise ValueError("collections must be a list of collection ids")
    if len(collections) > MAX_SIGN_IN_COLLECTIONS:
        raise ValueError(f"at most {MAX_SIGN_IN_COLLECTIONS} collections")
    return with_role(LOCAL_TENANT, LOCAL_SUBJECT, collections, role)
