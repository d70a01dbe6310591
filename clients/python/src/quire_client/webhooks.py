"""Verifying a webhook delivery as the Standard Webhooks specification says: the `webhook-id`, `webhook-timestamp`
(seconds) and `webhook-signature` headers; each signature `v1,` and the base64 of an HMAC-SHA256 over
`{id}.{timestamp}.{body}`, keyed by the secret's bytes (`whsec_` then base64). While a secret is being rotated a
delivery carries one signature per secret, space-separated, and either is accepted."""

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from quire_client.errors import WebhookVerificationError

SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix the specification gives every secret, not a secret
# How far a timestamp may stray from this machine's clock (the specification's five minutes): older is a replay.
TOLERANCE_SECONDS = 5 * 60


def _key(secret: str) -> bytes:
    try:
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError) as error:
        raise ValueError("a signing secret is whsec_ then base64") from error


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The `v1,` signature of one delivery (what the sender puts in `webhook-signature`); for a receiver's tests."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(_key(secret), signed, hashlib.sha256).digest()).decode()


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: bytes | str,
    *,
    now: float | None = None,
    tolerance_seconds: int = TOLERANCE_SECONDS,
) -> Any:
    """The delivery's JSON payload once its signature is checked; WebhookVerificationError when a header is
    missing, the timestamp is more than `tolerance_seconds` from `now` (a replay), or no signature is the secret's
    over exactly this body. `body` is the raw request body, before any JSON parsing."""
    raw = body.encode() if isinstance(body, str) else body
    lowered = {name.lower(): value for name, value in headers.items()}
    try:
        message_id, timestamp = lowered["webhook-id"], int(lowered["webhook-timestamp"])
        offered = lowered["webhook-signature"].split()
    except (KeyError, ValueError) as error:
        raise WebhookVerificationError(
            "the webhook-id, webhook-timestamp or webhook-signature header is missing"
        ) from error
    clock = time.time() if now is None else now
    if abs(clock - timestamp) > tolerance_seconds:
        raise WebhookVerificationError(
            f"the timestamp is more than {tolerance_seconds} seconds from now: a replay or a clock off"
        )
    expected = sign(secret, message_id, timestamp, raw)
    # Constant time, against each offered signature (other schemes than v1 simply never match).
    if not any(hmac.compare_digest(candidate.encode(), expected.encode()) for candidate in offered):
        raise WebhookVerificationError("no signature matches this body with this secret")
    return json.loads(raw)
