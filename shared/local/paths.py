"""Where the local stack keeps its state: `.quire/` in the working directory."""

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATE_DIR_NAME = ".quire"
LOCAL_BUCKET = "quire-local"
# moto accepts any credentials; boto3 still wants some to sign with.
LOCAL_AWS_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "quire-local",
    "AWS_SECRET_ACCESS_KEY": "quire-local-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass(frozen=True)
class StackPaths:
    root: Path

    @classmethod
    def in_directory(cls, directory: Path | None = None) -> "StackPaths":
        return cls((directory or Path.cwd()).resolve() / STATE_DIR_NAME)

    @property
    def state(self) -> Path:
        """Written by the supervisor when everything is ready; removed when it stops."""
        return self.root / "state.json"

    @property
    def ports(self) -> Path:
        """Ports chosen on first start and reused, so URLs stay the same across restarts."""
        return self.root / "ports.json"

    @property
    def pgdata(self) -> Path:
        return self.root / "pgdata"

    @property
    def postgres_admin_secret(self) -> Path:
        return self.root / "postgres-admin.secret"

    @property
    def app_role_secret(self) -> Path:
        return self.root / "app-role.secret"

    @property
    def jwt_secret(self) -> Path:
        return self.root / "jwt.key"

    @property
    def console_sign_in_key(self) -> Path:
        """What the console's one-click sign-in asks for: only who can read `.quire/` (or the address `quire up`
        prints) signs in, not any process that can reach the loopback port."""
        return self.root / "console-sign-in.key"

    @property
    def event_archive(self) -> Path:
        """Every event the local bus published, one JSON line each (the stand-in for the AWS bus's archive)."""
        return self.root / "events" / "bus.jsonl"

    @property
    def s3_objects(self) -> Path:
        """The local S3's buckets, every object version written through before S3 answers."""
        return self.root / "s3"

    @property
    def legacy_s3_snapshot(self) -> Path:
        """Where a stack of an earlier build kept its objects (written on a clean stop only); imported once."""
        return self.root / "s3-snapshot.pickle"

    @property
    def log(self) -> Path:
        return self.root / "stack.log"

    def ensure(self) -> None:
        """Create the state directory, and (re)assert that what it holds is its owner's alone."""
        self.root.mkdir(mode=0o700, exist_ok=True)
        if self.root.stat().st_mode & 0o007:
            self.root.chmod(self.root.stat().st_mode & 0o770)
        for private in (self.log, self.legacy_s3_snapshot, self.state, self.ports):
            if private.exists() and private.stat().st_mode & 0o077:
                private.chmod(0o600)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")


def write_private_json(path: Path, data: dict[str, Any]) -> None:
    """Write JSON readable by the owner only (it holds connection passwords), atomically."""
    partial = path.with_suffix(".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)
    partial.replace(path)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return loaded
