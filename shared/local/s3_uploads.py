"""The local S3's multipart uploads in progress, kept on disk: a part the server answered 200 for survives a restart
and `kill -9`, and no part's bytes are ever held in memory. The requests are `shared/local/s3_multipart.py`'s.

Layout under the store's root (`.quire/s3/uploads/`):

    <upload id>/upload.json                 bucket, key, when begun, metadata, tags, checksum algorithm (the commit)
    <upload id>/parts/<nnnnn>.json          part n: size, ETag (the MD5 of its bytes), SHA-256, its file (the commit)
    <upload id>/parts/<nnnnn>-<nonce>.data  its bytes
    <upload id>/assembled                   the completed object, until the durable store moves it into its bucket

A part's bytes are streamed to a file of their own and synced, then its record is written aside and renamed over the
part's earlier record, then the directory is synced: a PUT cut short leaves a file no record names, never a part,
and the next start removes it. An upload without its `upload.json` (begun or finished when a crash came) is removed.
"""

import base64
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import threading
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared.local.durable_s3 import fsync_directory, write_synced
from shared.local.s3_errors import S3Error, no_such_upload

_log = logging.getLogger(__name__)

MIN_PART_SIZE = 5 * 1024 * 1024  # S3's: every part but the last
MAX_PART_SIZE = 5 * 1024 * 1024 * 1024
MAX_PART_NUMBER = 10_000
_CHUNK = 1 << 20
_UPLOAD_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
# The checksums S3 takes with a part that the standard library computes (CRC32C and CRC64NVME it does not).
_CHECKSUMS = ("sha256", "sha1", "crc32")


@dataclass(frozen=True)
class Part:
    number: int
    size: int
    etag: str  # hex MD5 of the part's bytes, unquoted
    sha256: str  # base64, as S3 writes checksums
    last_modified: datetime
    file: str

    def record(self) -> dict[str, Any]:
        return {
            "partNumber": self.number,
            "size": self.size,
            "etag": self.etag,
            "sha256": self.sha256,
            "lastModified": self.last_modified.isoformat(),
            "file": self.file,
        }


@dataclass
class Upload:
    upload_id: str
    bucket: str
    key: str
    initiated: datetime
    metadata: dict[str, str]
    tags: dict[str, str]
    checksum_algorithm: str | None
    directory: Path
    parts: dict[int, Part] = field(default_factory=dict)
    # Held while a part's record is committed and while the upload is completed or aborted: a part never lands in
    # an upload that is gone, and a completion reads one set of parts.
    lock: threading.Lock = field(default_factory=threading.Lock)
    finished: bool = False

    def record(self) -> dict[str, Any]:
        return {
            "uploadId": self.upload_id,
            "bucket": self.bucket,
            "key": self.key,
            "initiated": self.initiated.isoformat(),
            "metadata": self.metadata,
            "tags": self.tags,
            "checksumAlgorithm": self.checksum_algorithm,
        }


@dataclass(frozen=True)
class Listed:
    """A part as a completion names it."""

    number: int
    etag: str
    sha256: str | None


@dataclass(frozen=True)
class Assembled:
    path: Path
    size: int
    etag: str  # the multipart ETag: the MD5 of the parts' binary MD5s, then "-" and how many
    sha256: str | None  # the composite checksum (base64 of the SHA-256 of the parts' binary SHA-256s)
    parts: int


def _bad_digest(algorithm: str) -> S3Error:
    if algorithm == "md5":
        return S3Error(400, "BadDigest", "The Content-MD5 you specified did not match what we received.")
    return S3Error(400, "BadDigest", f"The {algorithm.upper()} you specified did not match the calculated checksum.")


class UploadStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._uploads: dict[str, Upload] = {}
        self._lock = threading.Lock()

    # -- reading back ------------------------------------------------------------------------------------------

    def restore(self) -> int:
        """Read the open uploads back; returns how many. What a crash left half done is removed."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        uploads: dict[str, Upload] = {}
        for directory in sorted(self.root.iterdir()):
            upload = self._read_upload(directory)
            if upload is None:
                shutil.rmtree(directory, ignore_errors=True)  # begun or finished when a crash came: never open
                continue
            uploads[upload.upload_id] = upload
        with self._lock:
            self._uploads = uploads
        return len(uploads)

    def _read_upload(self, directory: Path) -> Upload | None:
        try:
            record = json.loads((directory / "upload.json").read_bytes())
            upload = Upload(
                upload_id=directory.name,
                bucket=record["bucket"],
                key=record["key"],
                initiated=datetime.fromisoformat(record["initiated"]),
                metadata=dict(record.get("metadata") or {}),
                tags=dict(record.get("tags") or {}),
                checksum_algorithm=record.get("checksumAlgorithm"),
                directory=directory,
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        (directory / "assembled").unlink(missing_ok=True)  # a completion that never committed
        parts_directory = directory / "parts"
        parts_directory.mkdir(mode=0o700, exist_ok=True)
        for path in parts_directory.glob("*.json"):
            part = _read_part(path)
            if part is not None and _size_of(parts_directory / part.file) == part.size:
                upload.parts[part.number] = part
            else:
                _log.warning("part record %s is unreadable or its bytes are not whole; the part is dropped", path)
        named = {part.file for part in upload.parts.values()}
        for path in parts_directory.iterdir():
            if path.suffix != ".json" and path.name not in named:
                path.unlink()  # bytes of a PUT cut short, or of a part replaced since: never acknowledged
        return upload

    # -- uploads -----------------------------------------------------------------------------------------------

    def begin(
        self,
        bucket: str,
        key: str,
        *,
        metadata: Mapping[str, str],
        tags: Mapping[str, str],
        checksum_algorithm: str | None,
    ) -> Upload:
        upload_id = secrets.token_urlsafe(48)
        directory = self.root / upload_id
        directory.mkdir(mode=0o700)
        (directory / "parts").mkdir(mode=0o700)
        upload = Upload(
            upload_id=upload_id,
            bucket=bucket,
            key=key,
            initiated=datetime.now(UTC),
            metadata=dict(metadata),
            tags=dict(tags),
            checksum_algorithm=checksum_algorithm,
            directory=directory,
        )
        write_synced(directory / "upload.json", [json.dumps(upload.record()).encode()])
        fsync_directory(directory)
        fsync_directory(self.root)
        with self._lock:
            self._uploads[upload_id] = upload
        return upload

    def get(self, upload_id: str, bucket: str, key: str) -> Upload:
        """The open upload of that id for that object; S3's NoSuchUpload for any other (a key that is not the
        upload's included)."""
        with self._lock:
            upload = self._uploads.get(upload_id) if _UPLOAD_ID.fullmatch(upload_id) else None
        if upload is None or upload.bucket != bucket or upload.key != key:
            raise no_such_upload(upload_id)
        return upload

    def open_uploads(self, bucket: str, prefix: str) -> list[Upload]:
        """S3's order: by key, then by when each was begun."""
        with self._lock:
            found = [u for u in self._uploads.values() if u.bucket == bucket and u.key.startswith(prefix)]
        return sorted(found, key=lambda u: (u.key, u.initiated, u.upload_id))

    def abort(self, upload: Upload) -> None:
        with upload.lock:
            if upload.finished:
                raise no_such_upload(upload.upload_id)
            self._remove(upload)

    def _remove(self, upload: Upload) -> None:
        """The record goes first (synced: the upload is gone for good), then the bytes."""
        upload.finished = True
        with self._lock:
            self._uploads.pop(upload.upload_id, None)
        (upload.directory / "upload.json").unlink(missing_ok=True)
        fsync_directory(upload.directory)
        shutil.rmtree(upload.directory, ignore_errors=True)

    # -- parts -------------------------------------------------------------------------------------------------

    def put_part(self, upload: Upload, number: int, body: Iterable[bytes], claimed: Mapping[str, str]) -> Part:
        """Stream a part's bytes to disk and commit it; `claimed` holds the checksums the request sent (by name:
        `md5` in base64 from Content-MD5, `sha256`, `sha1`, `crc32` in base64), each checked against the bytes."""
        parts_directory = upload.directory / "parts"
        name = f"{number:05d}-{secrets.token_hex(8)}.data"
        path = parts_directory / name
        md5, sha256, sha1, crc32, size = hashlib.md5(), hashlib.sha256(), hashlib.sha1(), 0, 0  # noqa: S324 - S3's ETag
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileNotFoundError:
            raise no_such_upload(upload.upload_id) from None  # completed or aborted meanwhile
        try:
            try:
                for chunk in body:
                    md5.update(chunk)
                    sha256.update(chunk)
                    if "sha1" in claimed:
                        sha1.update(chunk)
                    if "crc32" in claimed:
                        crc32 = zlib.crc32(chunk, crc32)
                    size += len(chunk)
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(descriptor, view) :]
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            computed = {
                "md5": base64.b64encode(md5.digest()).decode(),
                "sha256": base64.b64encode(sha256.digest()).decode(),
                "sha1": base64.b64encode(sha1.digest()).decode(),
                "crc32": base64.b64encode(crc32.to_bytes(4, "big")).decode(),
            }
            for algorithm, value in claimed.items():
                if computed[algorithm] != value:
                    raise _bad_digest(algorithm)
            part = Part(number, size, md5.hexdigest(), computed["sha256"], datetime.now(UTC), name)
            replaced = self._commit_part(upload, part)
        except BaseException:
            path.unlink(missing_ok=True)
            raise
        if replaced is not None:
            (parts_directory / replaced.file).unlink(missing_ok=True)  # no record names it any more
        return part

    @staticmethod
    def _commit_part(upload: Upload, part: Part) -> Part | None:
        """The part's record in place of its number's earlier one, synced; that earlier part, if any."""
        parts_directory = upload.directory / "parts"
        with upload.lock:
            if upload.finished:
                raise no_such_upload(upload.upload_id)
            replaced = upload.parts.get(part.number)
            write_synced(parts_directory / f"{part.number:05d}.json", [json.dumps(part.record()).encode()])
            fsync_directory(parts_directory)
            upload.parts[part.number] = part
        return replaced

    def parts(self, upload: Upload) -> list[Part]:
        with upload.lock:
            return sorted(upload.parts.values(), key=lambda part: part.number)

    # -- completing --------------------------------------------------------------------------------------------

    def assemble(self, upload: Upload, listed: list[Listed]) -> Assembled:
        """Check the parts a completion names as S3 does, then stream them into one file, synced. The caller holds
        `upload.lock` until the object is committed and `finish` is called, or the completion failed."""
        if upload.finished:
            raise no_such_upload(upload.upload_id)
        chosen = self._chosen_parts(upload, listed)
        path = upload.directory / "assembled"
        size = 0
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for part in chosen:
                size += _append(descriptor, upload.directory / "parts" / part.file)
            os.fsync(descriptor)
        except BaseException:
            os.close(descriptor)
            path.unlink(missing_ok=True)
            raise
        os.close(descriptor)
        md5s = hashlib.md5(b"".join(bytes.fromhex(part.etag) for part in chosen))  # noqa: S324 - S3's ETag
        sha256: str | None = None
        if upload.checksum_algorithm == "SHA256":
            digests = b"".join(base64.b64decode(part.sha256) for part in chosen)
            sha256 = base64.b64encode(hashlib.sha256(digests).digest()).decode()
        return Assembled(path, size, f"{md5s.hexdigest()}-{len(chosen)}", sha256, len(chosen))

    @staticmethod
    def _chosen_parts(upload: Upload, listed: list[Listed]) -> list[Part]:
        if not listed:
            raise S3Error(400, "MalformedXML", "The XML you provided was not well-formed or did not validate.")
        numbers = [entry.number for entry in listed]
        if numbers != sorted(set(numbers)):
            raise S3Error(
                400,
                "InvalidPartOrder",
                "The list of parts was not in ascending order. Parts must be ordered by part number.",
                UploadId=upload.upload_id,
            )
        chosen: list[Part] = []
        for entry in listed:
            part = upload.parts.get(entry.number)
            if part is None or part.etag != entry.etag.strip().strip('"'):
                raise S3Error(
                    400,
                    "InvalidPart",
                    "One or more of the specified parts could not be found. The part may not have been uploaded, or"
                    " the specified entity tag may not match the part's entity tag.",
                    UploadId=upload.upload_id,
                    PartNumber=str(entry.number),
                    ETag=entry.etag,
                )
            if upload.checksum_algorithm == "SHA256":
                if entry.sha256 is None:
                    raise S3Error(
                        400,
                        "InvalidRequest",
                        "The upload was created using a sha256 checksum. The complete request must include the"
                        f" checksum for each part. It was missing for part {entry.number} in the request.",
                    )
                if entry.sha256 != part.sha256:
                    raise S3Error(
                        400,
                        "InvalidPart",
                        f"The sha256 checksum of part {entry.number} does not match the part's checksum.",
                        UploadId=upload.upload_id,
                        PartNumber=str(entry.number),
                    )
            chosen.append(part)
        for part in chosen[:-1]:
            if part.size < MIN_PART_SIZE:
                raise S3Error(
                    400,
                    "EntityTooSmall",
                    "Your proposed upload is smaller than the minimum allowed object size.",
                    ProposedSize=str(part.size),
                    MinSizeAllowed=str(MIN_PART_SIZE),
                    PartNumber=str(part.number),
                )
        return chosen

    def finish(self, upload: Upload) -> None:
        """After the completed object is committed: the upload and its parts go (a second completion is
        NoSuchUpload, as on S3). The caller holds `upload.lock`."""
        self._remove(upload)


def _append(descriptor: int, source: Path) -> int:
    """Copy a part's file to the end of `descriptor` in the kernel where it can, never whole through memory."""
    with source.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        copied = 0
        try:
            while copied < size:
                sent = os.copy_file_range(handle.fileno(), descriptor, size - copied)
                if sent == 0:
                    break
                copied += sent
        except OSError:
            handle.seek(copied)
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(descriptor, view) :]
                copied += len(chunk)
    return copied


def _read_part(path: Path) -> Part | None:
    try:
        record = json.loads(path.read_bytes())
        return Part(
            number=int(record["partNumber"]),
            size=int(record["size"]),
            etag=str(record["etag"]),
            sha256=str(record["sha256"]),
            last_modified=datetime.fromisoformat(record["lastModified"]),
            file=str(record["file"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def checksums_claimed(headers: Mapping[str, str]) -> dict[str, str]:
    """The checksums a part's request sends (lower-cased header names), by algorithm name."""
    claimed = {name: headers[f"x-amz-checksum-{name}"] for name in _CHECKSUMS if f"x-amz-checksum-{name}" in headers}
    if "content-md5" in headers:
        claimed["md5"] = headers["content-md5"]
    return claimed


def limited(stream: Any, length: int) -> Iterator[bytes]:
    """`length` bytes of a request's body, a chunk at a time; S3's IncompleteBody when it ends before."""
    left = length
    while left > 0:
        chunk = stream.read(min(_CHUNK, left))
        if not chunk:
            raise S3Error(
                400, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length header."
            )
        left -= len(chunk)
        yield chunk
