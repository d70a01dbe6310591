import importlib.util

import pytest

from shared.adapters.local.whisper_transcription import FasterWhisperTranscription
from shared.bootstrap import ConfigurationError, Container
from shared.config import Settings
from shared.domain.capabilities import Capability, CapabilityStatus
from shared.domain.chunk_situations import SituationRequest
from shared.domain.errors import CapabilityUnavailable
from shared.domain.transcription import MediaSource

# Present wherever they run: the local embedding model, RapidOCR and faster-whisper come with the project (the
# `local` extra); Textract and Transcribe need no model to be enabled. Everything else is absent until configured,
# and says why.
PRESENT = {
    "local": {Capability.EMBEDDER, Capability.OCR, Capability.TRANSCRIPTION},
    "aws": {Capability.OCR, Capability.TRANSCRIPTION},
}


@pytest.mark.parametrize("runtime", ["local", "aws"])
def test_absent_capabilities_say_so_with_a_reason(runtime: str) -> None:
    container = Container(Settings(runtime=runtime))
    for name, status in container.capabilities().items():
        if name in PRESENT[runtime]:
            assert status.available, name
            continue
        assert status.available is False, name
        assert status.reason and len(status.reason) > 20, name


def test_titan_refuses_a_dimension_it_does_not_offer_and_says_which_it_does() -> None:
    embedder = Container(Settings(runtime="aws", embedding_dimension=384)).embedder
    status = embedder.capability()
    assert not status.available
    assert "256" in (status.reason or "") and "QUIRE_EMBEDDING_DIMENSION" in (status.reason or "")
    with pytest.raises(CapabilityUnavailable, match="embedder"):
        embedder.embed(["text"])


def test_an_unavailable_capability_refuses_rather_than_returning_nothing() -> None:
    container = Container(Settings(runtime="local"))
    status = container.vision.capability()
    assert not status.available and "QUIRE_VISION_MODEL_ID" in (status.reason or "")
    with pytest.raises(CapabilityUnavailable, match="vision"):
        container.vision.describe(b"\x89PNG", "image/png")


def test_local_ocr_is_a_real_engine_and_aws_ocr_is_textract() -> None:
    assert Container(Settings(runtime="local")).ocr.capability() == CapabilityStatus.ready("rapidocr")
    assert Container(Settings(runtime="aws")).ocr.capability() == CapabilityStatus.ready("textract")


def test_local_transcription_is_faster_whisper_with_the_model_the_setting_names() -> None:
    default = Container(Settings(runtime="local")).transcription
    multilingual = Container(Settings(runtime="local", transcription_model="base")).transcription
    assert default.capability() == CapabilityStatus.ready("faster-whisper")
    assert isinstance(default, FasterWhisperTranscription) and default.model == "tiny.en"
    assert isinstance(multilingual, FasterWhisperTranscription) and multilingual.model == "base"


def test_local_transcription_without_its_packages_is_unavailable_naming_them(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *args: None if name == "ctranslate2" else real(name, *args)
    )
    transcription = Container(Settings(runtime="local")).transcription

    status = transcription.capability()
    assert not status.available and "ctranslate2 not installed: install the project's `local` extra" in (
        status.reason or ""
    )
    with pytest.raises(CapabilityUnavailable, match="transcription"):
        transcription.start(
            MediaSource(media_type="audio/wav", storage_key="k", storage_version_id=None, fetch=lambda path: None)
        )


def test_a_missing_database_url_names_the_setting() -> None:
    with pytest.raises(ConfigurationError, match="QUIRE_DATABASE_URL"):
        _ = Container(Settings(runtime="aws")).database


def test_no_summary_model_runs_locally_and_summaries_are_extractive_outlines() -> None:
    summarizer = Container(Settings(runtime="local", summary_model_id="anthropic.claude-x")).summarizer
    status = summarizer.capability()
    assert not status.available
    assert status.reason == "no text generator runs locally: summaries are extractive outlines"
    with pytest.raises(CapabilityUnavailable, match="summarizer"):
        summarizer.summarize(["Some text."], max_sentences=3)


def test_on_aws_the_summary_model_is_named_by_quire_summary_model_id(monkeypatch: pytest.MonkeyPatch) -> None:
    unset = Container(Settings(runtime="aws")).capabilities()[Capability.SUMMARIZER]
    assert not unset.available
    assert unset.reason == "QUIRE_SUMMARY_MODEL_ID is not set: summaries are extractive outlines"

    monkeypatch.setenv("QUIRE_SUMMARY_MODEL_ID", "us.anthropic.claude-sonnet-4-20250514-v1:0")
    container = Container(Settings(runtime="aws"))
    # Ready without a call (and without a client: it is built on the first summary).
    assert container.capabilities()[Capability.SUMMARIZER] == CapabilityStatus.ready(
        "bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0"
    )


def test_no_answer_model_runs_locally_and_answers_are_evidence_only() -> None:
    generator = Container(Settings(runtime="local", answer_model_id="anthropic.claude-x")).generator
    status = generator.capability()
    assert not status.available
    assert status.reason == "no text generator runs locally: answers are evidence only"
    with pytest.raises(CapabilityUnavailable, match="generator"):
        generator.generate("What is the refund period?", [])


def test_on_aws_the_answer_model_is_named_by_quire_answer_model_id(monkeypatch: pytest.MonkeyPatch) -> None:
    unset = Container(Settings(runtime="aws")).generator
    assert not unset.capability().available
    assert unset.capability().reason == "QUIRE_ANSWER_MODEL_ID is not set: answers are evidence only"

    monkeypatch.setenv("QUIRE_ANSWER_MODEL_ID", "us.anthropic.claude-sonnet-4-20250514-v1:0")
    container = Container(Settings(runtime="aws"))
    # Ready without a call (and without a client: it is built on the first answer).
    assert container.capabilities()[Capability.GENERATOR] == CapabilityStatus.ready(
        "bedrock:us.anthropic.claude-sonnet-4-20250514-v1:0"
    )
    assert container.generator.model_id == "us.anthropic.claude-sonnet-4-20250514-v1:0"
    assert container.generator.prompt_version == "answers-1"


def test_chunk_context_is_a_bedrock_model_on_aws_only_where_its_setting_names_one() -> None:
    from shared.adapters.aws.bedrock_situations import BedrockConverseSituator

    model = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    configured = Container(Settings(runtime="aws", chunk_context_model_id=model)).situator
    assert isinstance(configured, BedrockConverseSituator) and configured.model_id == model
    assert configured.capability() == CapabilityStatus.ready(f"bedrock:{model}")
    unset = Container(Settings(runtime="aws")).situator.capability()
    assert not unset.available and "QUIRE_CHUNK_CONTEXT_MODEL_ID is not set" in (unset.reason or "")
    # Locally there is no generator, whatever the setting says.
    local = Container(Settings(runtime="local", chunk_context_model_id=model)).situator
    assert not local.capability().available and "locally" in (local.capability().reason or "")
    with pytest.raises(CapabilityUnavailable, match="chunk_context"):
        local.situate(SituationRequest(document="Title: T", chunk="A chunk."))
