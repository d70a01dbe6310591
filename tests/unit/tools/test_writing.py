"""The writing tools (functions/tools/writing.py) over the fakes: artifacts and their versions, exports queued (never
rendered on the call), a PDF report as an artifact and its export, the write role, and the stale writer told the
latest version (tests/unit/services/ tests the services; tests/integration/test_agent_tools.py the stack)."""

import json
import uuid

import pytest

from functions.tools import writing
from shared.domain.auth import Role
from tests.builders.tool_services import ToolServicesOverFakes
from tests.fakes import principal

ANN = principal("acme", "docs", "finance")
READER = principal("acme", "docs", role=Role.READ)
REPORT = b"# Report\n\nRevenue grew in every region.\n"


@pytest.fixture
def services() -> ToolServicesOverFakes:
    return ToolServicesOverFakes()


def test_create_artifact_writes_version_one_made_by_the_tool_in_the_collection_named(
    services: ToolServicesOverFakes,
) -> None:
    ran = services.run(writing.create_artifact, ANN, collectionId="docs", name="Brief", markdown="# Brief\n\nGrew.\n")
    written = ran.wire()
    assert (written["artifact"]["collectionId"], written["artifact"]["name"], written["artifact"]["latestVersion"]) == (
        "docs",
        "Brief",
        1,
    )
    assert written["version"]["version"] == 1 and written["version"]["blockCount"] == 2
    assert written["version"]["provenance"]["producer"] == "tool create_artifact"
    assert ran.touched == {"docs"}
    stored = services.artifacts.get(ANN, ran.result.artifact.artifact_id)
    assert [block.text for block in stored.content.blocks] == ["Brief", "Grew."]


def test_update_artifact_adds_a_version_on_the_latest_and_a_stale_one_is_told_the_latest(
    services: ToolServicesOverFakes,
) -> None:
    # Given an artifact at version 2
    created = services.run(writing.create_artifact, ANN, collectionId="finance", name="Brief", markdown="# One\n")
    artifact_id = created.result.artifact.artifact_id
    updated = services.run(
        writing.update_artifact, ANN, artifactId=artifact_id, expectedLatestVersion=1, markdown="# Two\n"
    )
    assert updated.result.artifact.latest_version == 2 and updated.touched == {"finance"}
    assert updated.result.version.provenance.producer == "tool update_artifact"
    # When a writer who read version 1 writes again
    stale = services.refused("update_artifact", ANN, artifactId=artifact_id, expectedLatestVersion=1, markdown="# X\n")
    # Then it is refused with the latest version and the tool to call again, audited in the artifact's collection
    assert (stale["error"], stale["latestVersion"], stale["nextTool"]) == ("version_conflict", 2, "update_artifact")
    assert "expectedLatestVersion=2" in stale["message"]
    assert services.last_audited.collection_ids == ("finance",)
    assert services.artifacts.readable(ANN, artifact_id).latest_version == 2


def test_an_artifact_the_caller_may_not_see_is_the_not_found_of_a_random_id_and_touches_nothing(
    services: ToolServicesOverFakes,
) -> None:
    finance = services.run(writing.create_artifact, ANN, collectionId="finance", name="Pay", markdown="# Pay\n")
    artifact_id = finance.result.artifact.artifact_id
    docs_only = principal("acme", "docs")
    for name, arguments in (
        ("update_artifact", {"expectedLatestVersion": 1, "markdown": "# X\n"}),
        ("export_artifact", {"format": "pdf"}),
        ("export_artifact", {"format": "pdf", "version": 1}),
    ):
        missing = services.refused(name, docs_only, artifactId=uuid.uuid4(), **arguments)
        unseen = services.refused(name, docs_only, artifactId=artifact_id, **arguments)
        assert unseen == missing and unseen["error"] == "not_found"
        assert services.last_audited.collection_ids == ()


def test_a_reader_cannot_write_and_the_refusal_is_audited_in_the_collection_named(
    services: ToolServicesOverFakes,
) -> None:
    file_id = services.markdown(ANN, REPORT)
    for name, arguments in (
        ("create_artifact", {"collectionId": "docs", "name": "No", "markdown": "# No\n"}),
        ("create_pdf", {"collectionId": "docs", "name": "No", "markdown": "# No\n"}),
        ("convert_file", {"fileId": file_id, "format": "pdf"}),
    ):
        refused = services.refused(name, READER, **arguments)
        assert refused["error"] == "forbidden" and "write role" in refused["message"], refused
        assert (services.last_audited.collection_ids, services.last_audited.outcome) == (("docs",), "forbidden")
    assert services.writing.artifact_store.artifacts == {} and list(services.writing.queue.drain()) == []


def test_a_body_the_service_refuses_is_invalid_arguments(services: ToolServicesOverFakes) -> None:
    both = services.refused("create_artifact", ANN, collectionId="docs", name="Both", markdown="# A\n", blocks=[])
    assert both["error"] == "invalid_arguments" and "exactly one" in both["message"]
    bad_block = services.refused("create_artifact", ANN, collectionId="docs", name="Bad", blocks=[{"kind": "poem"}])
    assert bad_block["error"] == "invalid_arguments" and bad_block["message"].startswith("blocks[0]")
    assert services.last_audited.collection_ids == ("docs",)


def test_export_artifact_queues_the_latest_version_by_default(services: ToolServicesOverFakes) -> None:
    created = services.run(writing.create_artifact, ANN, collectionId="docs", name="Brief", markdown="# One\n")
    artifact_id = created.result.artifact.artifact_id
    services.run(writing.update_artifact, ANN, artifactId=artifact_id, expectedLatestVersion=1, markdown="# Two\n")
    ran = services.run(writing.export_artifact, ANN, artifactId=artifact_id, format="docx")
    export = ran.wire()
    assert (export["artifactId"], export["version"], export["format"], export["state"]) == (
        str(artifact_id),
        2,
        "docx",
        "pending",
    )
    assert export["kind"] == "artifact" and export["fileId"] is None and ran.touched == {"docs"}
    assert not {"url", "storageKey", "bucket"} & set(export)
    first = services.run(writing.export_artifact, ANN, artifactId=artifact_id, version=1, format="md")
    assert first.result.version == 1 and first.touched == {"docs"}


def test_create_pdf_is_an_artifact_and_its_pdf_export_which_renders_to_a_file(services: ToolServicesOverFakes) -> None:
    ran = services.run(writing.create_pdf, ANN, collectionId="docs", name="Report", markdown="# Report\n\nGrew.\n")
    made = ran.wire()
    assert (made["artifact"]["latestVersion"], made["export"]["format"], made["export"]["state"]) == (
        1,
        "pdf",
        "pending",
    )
    assert made["export"]["artifactId"] == made["artifact"]["artifactId"] and ran.touched == {"docs"}
    services.writing.render_all()
    rendered = services.exports.get(ANN, ran.result.export.export_id)
    assert rendered.record.file_id is not None


def test_convert_file_queues_a_conversion_of_the_newest_version(services: ToolServicesOverFakes) -> None:
    file_id = services.markdown(ANN, REPORT, collection="finance")
    outcome = services.call("convert_file", ANN, fileId=file_id, format="html")
    assert not outcome.is_error, outcome.content
    converted = outcome.content
    assert (converted["sourceFileId"], converted["sourceVersionId"], converted["format"]) == (
        str(file_id),
        str(services.newest_version(ANN, file_id)),
        "html",
    )
    assert converted["state"] == "pending" and services.last_audited.collection_ids == ("finance",)


def test_converting_a_document_not_yet_extracted_is_not_ready(services: ToolServicesOverFakes) -> None:
    file_id = services.markdown(ANN, REPORT, process=False)
    refused = services.refused("convert_file", ANN, fileId=file_id, format="pdf")
    assert refused["error"] == "not_ready" and refused["nextTool"] == "get_file_processing_status"
    assert services.last_audited.collection_ids == ("docs",)


def test_a_result_of_the_callers_own_words_carries_no_fence(services: ToolServicesOverFakes) -> None:
    outcome = services.call("create_artifact", ANN, collectionId="docs", name="Brief", markdown="# B\n")
    assert outcome.content["artifact"]["name"] == "Brief" and "untrusted" not in outcome.content
    assert "quire-data" not in json.dumps(outcome.content)
