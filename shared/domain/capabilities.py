"""What an optional capability can do here, reported truthfully to `quire status` and the API."""

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class Capability(StrEnum):
    EMBEDDER = "embedder"
    OCR = "ocr"
    VISION = "vision"
    TRANSCRIPTION = "transcription"
    GENERATOR = "generator"
    SUMMARIZER = "summarizer"
    CHUNK_CONTEXT = "chunk_context"
    MALWARE_SCANNING = "malware_scanning"


class CapabilityStatus(BaseModel):
    """`available` is false whenever a call would not produce a real result; `reason` then says why."""

    model_config = ConfigDict(frozen=True)

    available: bool
    provider: str
    reason: str | None = None

    @classmethod
    def ready(cls, provider: str) -> "CapabilityStatus":
        return cls(available=True, provider=provider, reason=None)

    @classmethod
    def unavailable(cls, provider: str, reason: str) -> "CapabilityStatus":
        return cls(available=False, provider=provider, reason=reason)
