"""One processing attempt's work objects: what the chunk and embed steps leave for the index step, their keys
and their encodings. References pass between the workflow's states; content passes through storage, under
the attempt's own prefix, and the attempt's last step removes it."""

import base64
import re
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from pydantic import BaseModel, ConfigDict

from shared.domain.chunk_situations import Situation, situated
from shared.domain.knowledge import ChunkDraft
from shared.domain.uploads import DERIVED_PREFIX, StorageKeyParts, derived_prefix, parse_storage_key, storage_key


def work_prefix(tenant_id: str, file_id: UUID, version_id: UUID, attempt: int) -> str:
    """Where one attempt's indexing work lives between its steps (chunk batches, their vectors, the manifest):
    references pass between the workflow's states, content passes through here, and the attempt's last step
    removes it."""
    return f"{derived_prefix(storage_key(tenant_id, file_id, version_id))}work-{attempt}/"


def chunk_manifest_key(prefix: str) -> str:
    return f"{prefix}chunks.json"


def chunk_batch_key(prefix: str, batch: int) -> str:
    return f"{prefix}chunks-{batch:05d}.json"


def vector_batch_key(prefix: str, batch: int) -> str:
    """A batch's vectors, or why the model gave none: one key per batch, so every work key is known."""
    return f"{prefix}vectors-{batch:05d}.json"


@dataclass(frozen=True)
class WorkKeyParts:
    original: StorageKeyParts
    attempt: int


def parse_work_key(key: str) -> WorkKeyParts | None:
    """The version and attempt an indexing work object belongs to, or None for any other key."""
    if not key.startswith(DERIVED_PREFIX):
        return None
    match = re.fullmatch(
        r"(?P<original>.+)/work-(?P<attempt>\d{1,9})/(chunks|(chunks|vectors|gap)-\d{5})\.json",
        key[len(DERIVED_PREFIX) :],
    )
    if match is None:
        return None
    original = parse_storage_key(match["original"])
    return WorkKeyParts(original, int(match["attempt"])) if original is not None else None


class ChunkManifest(BaseModel):
    """What the chunk step cut, written after its batches: its presence says every batch is stored."""

    model_config = ConfigDict(frozen=True)

    chunk_count: int
    batch_count: int
    truncated: bool


class WorkVersions(BaseModel):
    """The storage versions of an attempt's work objects as the index step read them (the manifest, each batch's
    chunks and its vectors, in batch order): what publish deletes, exactly, with no listing."""

    model_config = ConfigDict(frozen=True)

    manifest: str | None
    chunks: tuple[str | None, ...]
    vectors: tuple[str | None, ...]


class ChunkBatch(BaseModel):
    """One batch of a version's chunks, embedded by one task of the workflow's Map."""

    model_config = ConfigDict(frozen=True)

    batch: int
    drafts: tuple[ChunkDraft, ...]
    # What a model situating the chunks reads of their document (chunk_situations.document_head), the same in every
    # batch; None where no model writes situating sentences.
    document_head: str | None = None


class EmbeddedBatch(BaseModel):
    """The vectors of one chunk batch (float32, base64: a quarter of their JSON size), or why there are none."""

    model_config = ConfigDict(frozen=True)

    batch: int
    count: int
    embedding_model: str | None = None
    dimension: int = 0
    vectors_float32: str | None = None
    tokens: int = 0
    gap: str | None = None
    # Each chunk's situating sentence, in batch order, where a model writes them (none: empty), and why some
    # chunks have none (shared/domain/chunk_situations.py). Kept whether or not the vectors are.
    situations: tuple[Situation | None, ...] = ()
    context_gap: str | None = None
    context_model: str | None = None  # the model asked for them (None: no model writes them here)

    @classmethod
    def of(
        cls,
        batch: int,
        vectors: Sequence[Sequence[float]],
        *,
        model: str,
        tokens: int,
        situations: Sequence[Situation | None] = (),
        context_gap: str | None = None,
        context_model: str | None = None,
    ) -> "EmbeddedBatch":
        dimension = len(vectors[0]) if vectors else 0
        if any(len(vector) != dimension for vector in vectors):
            raise ValueError("the embedder returned vectors of different lengths")
        packed = array("f", (value for vector in vectors for value in vector))
        if sys.byteorder != "little":
            packed.byteswap()
        return cls(
            batch=batch,
            count=len(vectors),
            embedding_model=model,
            dimension=dimension,
            vectors_float32=base64.b64encode(packed.tobytes()).decode("ascii"),
            tokens=tokens,
            situations=tuple(situations),
            context_gap=context_gap,
            context_model=context_model,
        )

    @classmethod
    def missing(
        cls,
        batch: int,
        count: int,
        gap: str,
        *,
        situations: Sequence[Situation | None] = (),
        context_gap: str | None = None,
        context_model: str | None = None,
    ) -> "EmbeddedBatch":
        return cls(
            batch=batch,
            count=count,
            gap=gap,
            situations=tuple(situations),
            context_gap=context_gap,
            context_model=context_model,
        )

    def situated(self, drafts: Sequence[ChunkDraft]) -> tuple[ChunkDraft, ...]:
        """The batch's chunks with the sentences the embed step found for them (as they were cut without)."""
        if not self.situations:
            return tuple(drafts)
        if len(self.situations) != len(drafts):
            raise ValueError(f"batch {self.batch} has {len(self.situations)} sentences for {len(drafts)} chunks")
        return tuple(situated(draft, situation) for draft, situation in zip(drafts, self.situations, strict=True))

    def vectors(self) -> list[list[float]] | None:
        if self.vectors_float32 is None:
            return None
        packed = array("f")
        packed.frombytes(base64.b64decode(self.vectors_float32))
        if sys.byteorder != "little":
            packed.byteswap()
        if len(packed) != self.count * self.dimension:
            raise ValueError(f"batch {self.batch} holds {len(packed)} values, not {self.count}x{self.dimension}")
        values = packed.tolist()
        return [values[start : start + self.dimension] for start in range(0, len(values), self.dimension)]
