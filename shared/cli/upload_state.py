"""Where `quire upload` writes down an upload by parts while it runs, so that `quire upload FILE --resume` finds its
session after a crash, a kill or a Ctrl-C without being told its id: one small JSON file per upload under
`.quire/uploads/`, named by the file's resolved path, size and modification time (a file changed since is another
file, whose session it does not find), removed once the upload is complete."""

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared.local.paths import StackPaths, read_json, write_private_json


@dataclass(frozen=True)
class UploadState:
    folder: Path

    @classmethod
    def in_directory(cls, directory: Path | None = None) -> "UploadState":
        return cls(StackPaths.in_directory(directory).root / "uploads")

    def _entry(self, path: Path) -> Path:
        seen = path.stat()
        key = f"{path.resolve()}\0{seen.st_size}\0{seen.st_mtime_ns}"
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"

    def remember(self, path: Path, ticket: dict[str, Any], collection: str) -> None:
        """Write down the session `ticket` opened for `path` (owner-only, like the rest of .quire/)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_private_json(
            self._entry(path),
            {
                "uploadId": ticket["uploadId"],
                "fileId": ticket["fileId"],
                "collectionId": collection,
                "path": str(path.resolve()),
                "byteSize": path.stat().st_size,
                "partCount": ticket["partCount"],
                "startedAt": datetime.now(UTC).isoformat(),
            },
        )

    def find(self, path: Path) -> dict[str, Any] | None:
        """The session written down for this very file (same path, size and modification time), if any."""
        return read_json(self._entry(path))

    def forget(self, path: Path) -> None:
        self._entry(path).unlink(missing_ok=True)
