"""Signing a webhook as the Standard Webhooks specification says (issue 34), so a receiver verifies it with an
existing library: `webhook-id`, `webhook-timestamp` (seconds) and `webhook-signature`, `v1,` and the base64 of an
HMAC-SHA256 over `{id}.{timestamp}.{body}` keyed by the secret's bytes (`whsec_` then base64). While a secret is
rotated both sign, space-separated, and a receiver accepts either.
"""

import base64
import hashlib
import hmac
import secrets
from collections.abc import Mapping, Sequence

SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix the specification gives every secret, not a secret
SECRET_BYTES = 32
# How far a receiver lets a timestamp stray from its clock (the specification's five minutes).
TOLERANCE_SECONDS = 5 * 60


class SignatureRefused(ValueError):
    """A delivery whose signature or timestamp a receiver must not accept; the message says which."""


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def _key(secret: str) -> bytes:
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a signing secret starts with whsec_")
    return base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()).decode()


def signed_headers(signing_secrets: Sequence[str], message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers of one delivery, signed by every secret in `signing_secrets` (two while rotating)."""
    if not signing_secrets:
        raise ValueError("a delivery is signed by at least one secret")
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(signature(secret, message_id, timestamp, body) for secret in signing_secrets),
    }


def verify(secret: str, headers: Mapping[str, str], body: bytes, *, now: int) -> None:
    """What a receiver does (the Python client's verifier): SignatureRefused unless one of the signatures is the
    secret's over this id, timestamp and body, and the timestamp is within TOLERANCE_SECONDS of `now`."""
    lowered = {name.lower(): value for name, value in headers.items()}
    try:
        message_id, timestamp = lowered["webhook-id"], int(lowered["webhook-timestamp"])
        offered = lowered["webhook-signature"].split()
    except (KeyError, ValueError) as error:
        raise SignatureRefused("the webhook-id, webhook-timestamp or webhook-signature header is missing") from error
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        raise SignatureRefused(
            f"the timestamp is more than {TOLERANCE_SECONDS} seconds from now: a replay or a clock off"
        )
    expected = signature(secret, message_id, timestamp, body)
    if not any(hmac.compare_digest(candidate, expected) for candidate in offered):
        raise SignatureRefused("no signature matches this body with this secret")
