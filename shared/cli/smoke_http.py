"""The smoke test's HTTP, apart from Quire's API client: a public route asked without a token, a browser's form
POST to a presigned URL, refusals in words a person can act on, and which base URLs a token may be sent to."""

import http.client
import ipaddress
import json
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from shared.local.api_client import ApiError

_LOOPBACK_NAMES = frozenset({"localhost"})
# What a connection that failed may raise (urllib's URLError is an OSError).
UNANSWERED = (OSError, http.client.HTTPException)


class StorageRefused(Exception):
    """The presigned POST was refused by storage; the message holds its answer."""


def api_url_problem(url: str) -> str | None:
    """Why `url` cannot be the API's base URL, or None: http(s) with a host, and a bearer token never sent in
    clear text beyond this machine."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "not an http(s) URL with a host"
    if parts.query or parts.fragment:
        return "the base URL takes no query or fragment"
    if parts.scheme == "http" and not _is_loopback(parts.hostname):
        return "plain http would send the token in clear text: use https (plain http is for loopback only)"
    return None


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refusal_message(error: "ApiError") -> str:
    """An API refusal in words a person running the smoke test can act on."""
    if not isinstance(error.body, dict):
        # Not a JSON answer: an HTML error page, say. One line of it, and the likeliest cause.
        seen = " ".join(str(error.body).split())[:100]
        return f"HTTP {error.status}, not an answer of Quire's API ({seen}): is --api this deployment's ApiUrl?"
    body = error.body
    message = body.get("message") or str(body)[:300]
    if error.status == 401:
        return (
            f"the API refused the token (HTTP 401 {message}): it is missing, malformed or expired, or not an access"
            " token with the quire/api scope (on AWS, a Cognito access token lasts 15 minutes)"
        )
    code = f" {body['error']}" if body.get("error") else ""
    return f"HTTP {error.status}{code}: {message}"


def unanswered_reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    return str(reason if reason is not None else error) or type(error).__name__


def get_public(url: str) -> Any:
    """A GET of a route that takes no token, sent without one."""
    import urllib.error
    import urllib.request

    from shared.local.api_client import ApiError

    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - the API's URL, checked
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            detail: Any = json.loads(raw)
        except ValueError:
            detail = raw.decode(errors="replace")[:300]
        raise ApiError(error.code, detail) from None


def post_form(url: str, fields: dict[str, str], filename: str, content: bytes, media_type: str) -> None:
    """A browser's multipart form POST of a file to a presigned URL (the fields first, the file last)."""
    import urllib.error
    import urllib.request

    from urllib3 import encode_multipart_formdata

    body, content_type = encode_multipart_formdata({**fields, "file": (filename, content, media_type)})
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type}, method="POST")  # noqa: S310 - the URL the API signed
    try:
        with urllib.request.urlopen(request, timeout=60):  # noqa: S310 - the URL the API signed
            pass
    except urllib.error.HTTPError as error:
        # Storage's refusal (S3 answers XML): its code says which condition of the POST policy failed.
        seen = " ".join(error.read().decode(errors="replace").split())[:300]
        raise StorageRefused(f"storage refused the presigned POST (HTTP {error.code}): {seen}") from None
