"""What S3 checks of a presigned request before it takes the body, for the requests the local S3 answers itself
(a part's PUT to a URL `generate_presigned_url("upload_part", ...)` made). moto's server checks no signature.

An expired URL is refused (403 AccessDenied "Request has expired"), as is one whose signed headers the request
does not carry (a part signed with its `x-amz-checksum-sha256` sent without it: 403 SignatureDoesNotMatch, the
header being part of what was signed). A URL signed with the local stack's own credentials (`LOCAL_AWS_ENVIRONMENT`,
what every local client signs with) has its SigV4 signature checked as well, so a header sent with another value
than the one signed is refused as on S3. Other credentials are not known here and pass, as in moto.
"""

import hashlib
import hmac
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from shared.local.paths import LOCAL_AWS_ENVIRONMENT
from shared.local.s3_errors import S3Error

_SIGV4_TIME = "%Y%m%dT%H%M%SZ"
_LONGEST_LIFETIME = 604_800  # S3's limit on X-Amz-Expires: a week
_SIGNATURE_MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your key and signing method."
)


def _malformed(message: str) -> S3Error:
    return S3Error(400, "AuthorizationQueryParametersError", message)


def check_presigned(environ: Mapping[str, Any], query: Mapping[str, str], now: datetime | None = None) -> None:
    """Raise S3's refusal of a presigned request that has expired or does not match its signature; a request that
    is not presigned (signed in its Authorization header, or not at all) passes, as moto lets it."""
    moment = now or datetime.now(UTC)
    if "X-Amz-Signature" in query:
        _check_sigv4(environ, query, moment)
    elif "Signature" in query and "Expires" in query:  # SigV2's query form: an absolute expiry
        try:
            expires = datetime.fromtimestamp(int(query["Expires"]), UTC)
        except (ValueError, OverflowError):
            raise _malformed("Invalid date (should be seconds since epoch): " + query["Expires"]) from None
        if moment > expires:
            raise _expired(expires, moment)


def _expired(expires: datetime, moment: datetime, lifetime: str | None = None) -> S3Error:
    details = {"X-Amz-Expires": lifetime} if lifetime is not None else {}
    return S3Error(
        403,
        "AccessDenied",
        "Request has expired",
        **details,
        Expires=expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
        ServerTime=moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def _check_sigv4(environ: Mapping[str, Any], query: Mapping[str, str], moment: datetime) -> None:
    try:
        signed_at = datetime.strptime(query.get("X-Amz-Date", ""), _SIGV4_TIME).replace(tzinfo=UTC)
    except ValueError:
        raise _malformed("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"") from None
    lifetime = query.get("X-Amz-Expires", "")
    if not lifetime.isdigit():
        raise _malformed("X-Amz-Expires should be a number")
    if int(lifetime) > _LONGEST_LIFETIME:
        raise _malformed("X-Amz-Expires must be less than a week (in seconds) that is 604800 seconds")
    expires = signed_at + timedelta(seconds=int(lifetime))
    if moment > expires:
        raise _expired(expires, moment, lifetime)
    signed_headers = [name for name in query.get("X-Amz-SignedHeaders", "host").split(";") if name]
    if any(_header(environ, name) is None for name in signed_headers):
        raise S3Error(403, "SignatureDoesNotMatch", _SIGNATURE_MISMATCH)
    access_key, _, scope = query.get("X-Amz-Credential", "").partition("/")
    if access_key != LOCAL_AWS_ENVIRONMENT["AWS_ACCESS_KEY_ID"]:
        return
    expected = _signature(environ, query, signed_headers, scope, LOCAL_AWS_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"])
    if not hmac.compare_digest(expected, query["X-Amz-Signature"]):
        raise S3Error(403, "SignatureDoesNotMatch", _SIGNATURE_MISMATCH)


def _header(environ: Mapping[str, Any], name: str) -> str | None:
    key = name.upper().replace("-", "_")
    value = environ.get(key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}")
    return None if value is None else str(value)


def _encoded(text: str) -> str:
    return quote(unquote(text), safe="-_.~")


def _signature(
    environ: Mapping[str, Any], query: Mapping[str, str], signed_headers: list[str], scope: str, secret: str
) -> str:
    """SigV4's signature of a presigned request, computed as S3 does (the path as sent, the payload unsigned)."""
    raw = str(environ.get("RAW_URI") or environ.get("PATH_INFO", "/"))
    path = urlsplit(raw).path if "://" in raw else raw.partition("?")[0]
    pairs = [pair.partition("=") for pair in str(environ.get("QUERY_STRING", "")).split("&") if pair]
    canonical_query = "&".join(
        sorted(f"{_encoded(key)}={_encoded(value)}" for key, _, value in pairs if unquote(key) != "X-Amz-Signature")
    )
    canonical_headers = "".join(f"{name}:{' '.join(str(_header(environ, name)).split())}\n" for name in signed_headers)
    canonical_request = "\n".join(
        [
            str(environ.get("REQUEST_METHOD", "")).upper(),
            path,
            canonical_query,
            canonical_headers,
            ";".join(signed_headers),
            "UNSIGNED-PAYLOAD",
        ]
    )
    string_to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            query["X-Amz-Date"],
            scope,
            hashlib.sha256(canonical_request.encode("utf-8", "surrogateescape")).hexdigest(),
        ]
    )
    key = ("AWS4" + secret).encode()
    for part in scope.split("/"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
