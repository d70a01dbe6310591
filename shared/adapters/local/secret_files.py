"""Secrets kept in files: created once, atomically, readable by their owner only."""

import contextlib
import os
import secrets
from pathlib import Path

MIN_SECRET_BYTES = 16


class SecretFileError(Exception):
    """A secret file exists but cannot be a secret; the message names the file to remove."""


def read_or_create_secret(path: Path) -> bytes:
    """The secret in `path`, creating a random one if there is none.

    The file appears complete or not at all (written aside, then hard-linked into place), so a crash
    or a concurrent creator can never leave an empty key that every later token would be checked with.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        aside = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        descriptor = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(secrets.token_urlsafe(32).encode("ascii"))
                handle.flush()
                os.fsync(handle.fileno())
            # Another process may win the race; then its secret is the secret.
            with contextlib.suppress(FileExistsError):
                os.link(aside, path)
        finally:
            aside.unlink(missing_ok=True)
    value = path.read_bytes().strip()
    if len(value) < MIN_SECRET_BYTES:
        raise SecretFileError(f"{path} holds {len(value)} bytes, too few for a secret: delete it and retry")
    return value
