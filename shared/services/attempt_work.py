"""An attempt's work objects in storage: the chunk step's batches and manifest, the embed step's vectors, read
back by the index step and removed by the last step."""

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from uuid import UUID

from pydantic import BaseModel

from shared.domain.attempt_work import (
    ChunkBatch,
    ChunkManifest,
    EmbeddedBatch,
    WorkVersions,
    chunk_batch_key,
    chunk_manifest_key,
    vector_batch_key,
    work_prefix,
)
from shared.domain.knowledge import ChunkDraft
from shared.domain.workflow import ProcessVersion
from shared.ports import FileContentStore

# Chunks per task of the embed Map: one task embeds them within its timeout (Titan answers one text per call).
CHUNKS_PER_BATCH = 128
# The largest work object read back (a batch of chunks, or its vectors).
_WORK_BYTES = 64 * 1024 * 1024

Batches = Iterator[tuple[Sequence[ChunkDraft], Sequence[Sequence[float]] | None]]


class StaleWork(Exception):
    """An attempt's stored work no longer fits the deployment (its vectors came from another model)."""


@dataclass(frozen=True)
class FetchedWork:
    """Every work object of an attempt, fetched to local scratch space (the index step's transaction locks the
    file's rows, and storage is slow), with the storage version of each as it was read."""

    manifest: ChunkManifest
    versions: WorkVersions
    local: Path

    @cached_property
    def gap(self) -> str | None:
        """Why the version stays keyword-only, or None when every batch has its vectors. One batch without them
        leaves all of it keyword-only, and says why: a re-index embeds it whole (never a version half in the
        vector lane)."""
        for number in range(self.manifest.batch_count):
            embedded = self._vectors(number)
            if embedded.gap is not None:
                return embedded.gap
        return None

    @cached_property
    def context_gap(self) -> str | None:
        """Why some chunks have no situating sentence (the first batch's reason that says one), or None."""
        for number in range(self.manifest.batch_count):
            embedded = self._vectors(number)
            if embedded.context_gap is not None:
                return embedded.context_gap
        return None

    @cached_property
    def context_model(self) -> str | None:
        """The model that situated the chunks (every batch asks the same one), or None where none was asked."""
        return self._vectors(0).context_model if self.manifest.batch_count else None

    def batches(self, *, model: str) -> Batches:
        """The batches in order, read one at a time as the index's transaction writes them, each chunk with the
        situating sentence the embed step found for it; without vectors when any batch has none (`gap`)."""
        gap = self.gap
        for number in range(self.manifest.batch_count):
            chunks = ChunkBatch.model_validate_json((self.local / chunk_batch_key("", number)).read_bytes())
            embedded = self._vectors(number)
            try:
                drafts = embedded.situated(chunks.drafts)
            except ValueError as error:
                raise StaleWork(str(error)) from error
            if gap is not None:
                yield drafts, None
                continue
            if embedded.embedding_model != model:
                # A deployment changed the model between the Map and this step: the attempt must run again.
                raise StaleWork(f"batch {number} was embedded by {embedded.embedding_model}, not {model}")
            if embedded.count != len(chunks.drafts):
                raise StaleWork(f"batch {number} has {embedded.count} vectors for {len(chunks.drafts)} chunks")
            yield drafts, embedded.vectors()

    def _vectors(self, number: int) -> EmbeddedBatch:
        return EmbeddedBatch.model_validate_json((self.local / vector_batch_key("", number)).read_bytes())


class AttemptWork:
    def __init__(self, content: FileContentStore) -> None:
        self._content = content

    def store_chunks(
        self,
        request: ProcessVersion,
        drafts: Sequence[ChunkDraft],
        *,
        truncated: bool,
        document_head: str | None = None,
    ) -> int:
        """The chunks in batches (each with `document_head`, what a model situating its chunks reads of the
        document), then the manifest that says every batch is stored; the number of batches."""
        prefix = _prefix(request)
        batches = [drafts[start : start + CHUNKS_PER_BATCH] for start in range(0, len(drafts), CHUNKS_PER_BATCH)]
        for number, batch in enumerate(batches):
            chunk_batch = ChunkBatch(batch=number, drafts=tuple(batch), document_head=document_head)
            self._put(chunk_batch_key(prefix, number), chunk_batch)
        self._put(
            chunk_manifest_key(prefix),
            ChunkManifest(chunk_count=len(drafts), batch_count=len(batches), truncated=truncated),
        )
        return len(batches)

    def chunks(self, request: ProcessVersion, batch: int) -> ChunkBatch:
        raw = self._content.get(chunk_batch_key(_prefix(request), batch), max_bytes=_WORK_BYTES)
        return ChunkBatch.model_validate_json(raw)

    def store_vectors(self, request: ProcessVersion, embedded: EmbeddedBatch) -> None:
        self._put(vector_batch_key(_prefix(request), embedded.batch), embedded)

    @contextmanager
    def fetched(self, request: ProcessVersion) -> Iterator[FetchedWork]:
        """Every work object of the attempt in a scratch directory, removed when the block ends."""
        prefix = _prefix(request)
        raw, manifest_version = self._content.get_versioned(chunk_manifest_key(prefix), max_bytes=_WORK_BYTES)
        manifest = ChunkManifest.model_validate_json(raw)
        with tempfile.TemporaryDirectory(prefix="quire-index-") as scratch:
            local = Path(scratch)
            read: dict[str, list[str | None]] = {"chunks": [], "vectors": []}
            for number in range(manifest.batch_count):
                for kind, key in (
                    ("chunks", chunk_batch_key(prefix, number)),
                    ("vectors", vector_batch_key(prefix, number)),
                ):
                    body, stored_version = self._content.get_versioned(key, max_bytes=_WORK_BYTES)
                    (local / key.rsplit("/", 1)[-1]).write_bytes(body)
                    read[kind].append(stored_version)
            versions = WorkVersions(
                manifest=manifest_version, chunks=tuple(read["chunks"]), vectors=tuple(read["vectors"])
            )
            yield FetchedWork(manifest=manifest, versions=versions, local=local)

    def remove(self, request: ProcessVersion, work: WorkVersions | None) -> int:
        """The attempt's work objects. On every file's path the index step has read them (`work`) and each is
        deleted by its version: no listing, whose cost grows with the bucket. Only an attempt that stopped
        before its index step read them (an interruption, a superseded attempt) has its prefix listed; a
        version written twice by a redelivered step is removed by reconciliation's sweep of finished work."""
        prefix = _prefix(request)
        if work is None:
            listed = list(self._content.object_versions(prefix))
            for stored in listed:
                self._delete(stored.key, stored.version_id)
            return len({stored.key for stored in listed})
        written = [(chunk_manifest_key(prefix), work.manifest)]
        written += [(chunk_batch_key(prefix, n), v) for n, v in enumerate(work.chunks)]
        written += [(vector_batch_key(prefix, n), v) for n, v in enumerate(work.vectors)]
        for key, version_id in written:
            self._delete(key, version_id)
        return len(written)

    def _delete(self, key: str, version_id: str | None) -> None:
        if version_id is None:
            self._content.delete_all_versions(key)  # a store that keeps no versions
        else:
            self._content.delete_version(key, version_id)

    def _put(self, key: str, model: BaseModel) -> None:
        self._content.put(key, model.model_dump_json().encode(), content_type="application/json")


def _prefix(request: ProcessVersion) -> str:
    return work_prefix(request.tenant_id, UUID(request.file_id), UUID(request.version_id), request.attempt)
