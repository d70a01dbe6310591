"""Webhook signatures (shared/domain/webhook_signing.py) as the Standard Webhooks specification defines them: the
specification's own example, and the reference library (`standardwebhooks`) verifying what Quire signs, refusing a
replayed timestamp and a tampered body."""

import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from shared.domain.webhook_signing import SignatureRefused, new_secret, signature, signed_headers, verify

# The example in the specification's text (standard-webhooks, spec/standard-webhooks.md).
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def test_the_specifications_example_is_signed_as_it_says() -> None:
    signed = signature(SPEC_SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}')
    assert signed == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_reference_library_verifies_what_quire_signs_and_refuses_a_replay_or_a_tampered_body() -> None:
    secret, body = new_secret(), b'{"type": "file.version.indexed", "eventId": "evt_1"}'
    now = int(time.time())
    headers = signed_headers([secret], "evt_1", now, body)
    assert Webhook(secret).verify(body, headers) is not None
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body.replace(b"indexed", b"failed"), headers)
    stale = signed_headers([secret], "evt_1", now - 3600, body)
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body, stale)


def test_while_a_secret_rotates_both_sign_and_either_verifies() -> None:
    old, new, body, now = new_secret(), new_secret(), b"{}", int(time.time())
    headers = signed_headers([old, new], "evt_2", now, body)
    assert len(headers["webhook-signature"].split()) == 2
    for secret in (old, new):
        Webhook(secret).verify(body, headers)
        verify(secret, headers, body, now=now)
    with pytest.raises(SignatureRefused, match="no signature matches"):
        verify(new_secret(), headers, body, now=now)
    with pytest.raises(SignatureRefused, match="seconds from now"):
        verify(old, headers, body, now=now + 301)
    with pytest.raises(SignatureRefused, match="header is missing"):
        verify(old, {"webhook-id": "evt_2"}, body, now=now)
