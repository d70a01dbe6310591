"""Indexed knowledge: chunks as the indexes see them, and ranked hits as the lanes return them."""

from pydantic import BaseModel, ConfigDict


class IndexedChunk(BaseModel):
    """One chunk of one file version, as stored for both retrieval lanes."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    tenant_id: str
    file_id: str
    version_id: str
    ordinal: int
    collection_id: str
    content: str
    content_hash: str
    embedding: tuple[float, ...] | None
    embedding_model: str | None


class RankedChunk(BaseModel):
    """A lane's answer: which chunk, at which rank, with the lane's own score (not comparable across lanes)."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    rank: int
    score: float
