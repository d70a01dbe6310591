"""What OCR, vision and transcription engines return, independent of the engine."""

from pydantic import BaseModel, ConfigDict, Field


class BoundingBox(BaseModel):
    """Normalised to the page: 0..1 from the top-left corner, so it survives rendering at any DPI."""

    model_config = ConfigDict(frozen=True)

    left: float = Field(ge=0, le=1)
    top: float = Field(ge=0, le=1)
    width: float = Field(ge=0, le=1)
    height: float = Field(ge=0, le=1)


class RecognizedLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    box: BoundingBox
    # Required, never defaulted: an engine that cannot say reports 0 and lets the low-confidence flag fire.
    confidence: float = Field(ge=0, le=1)


class RecognizedPage(BaseModel):
    model_config = ConfigDict(frozen=True)

    page: int = Field(ge=1)
    rotation_degrees: int = 0
    lines: tuple[RecognizedLine, ...]


class RecognitionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    engine: str
    pages: tuple[RecognizedPage, ...]


class ImageDescription(BaseModel):
    """A model's reading of an image. Always labelled a description, never mixed with transcribed text."""

    model_config = ConfigDict(frozen=True)

    model_id: str
    text: str


class Transcript(BaseModel):
    model_config = ConfigDict(frozen=True)

    engine: str
    text: str
