"""`quire eval --answers` on the demo set end to end: the demo corpus uploaded through the API (its finance and
procurement files into a restricted collection), every labelled question asked by its own tenant's caller and by a
decoy tenant's, every citation checked against the stored document (the real MiniLM, no generator)."""

import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from shared.local.answer_evaluation import RESTRICTED, evaluate, load_labels
from shared.local.api_client import media_type_for
from tests.integration.files_stack import Stack

# Measured on the demo set (docs/answers.md, "Evaluation"): 0.944, two near-topic questions the corpus does not
# answer (the R2's speed, its price) being answered from related passages. A drop below this is a regression in
# retrieval or in the refusal rules.
REFUSAL_CORRECTNESS_FLOOR = 0.85
# The encyclopedia set's unanswerable questions refused (measured: 0.6; none before issue 37's rules).
ENCYCLOPEDIA_UNANSWERABLE_FLOOR = 0.5


@pytest.mark.slow
def test_the_demo_set_is_cited_verbatim_resolvably_within_its_tenant_and_mostly_refused_rightly(
    stack: Stack, tmp_path: Path
) -> None:
    # Given the demo corpus uploaded into a fresh tenant (budget and suppliers in the restricted collection)
    tenant = f"e{uuid.uuid4().hex[:10]}"
    token = stack.token(tenant=tenant, collections=("demo", RESTRICTED))

    def upload(files: Sequence[tuple[Path, str]]) -> None:
        for path, collection in files:
            stack.upload(token, path.name, media_type_for(path), path.read_bytes(), collection=collection)
        stack.container.workflow.drain()  # type: ignore[attr-defined]

    # When the labelled demo questions are evaluated
    result = evaluate(stack.container, demo_tenant=tenant, upload=upload, directory=tmp_path)

    # Then every citation resolves, every extractive sentence is verbatim, nothing crosses tenants,
    # and refusals match the labels at least as well as measured
    demo = result["report"]["demo"]
    questions = len(load_labels()["demo"]["questions"])
    assert sum(demo["questions"].values()) == questions and demo["asked_by_other_tenant"] == questions
    assert demo["citations_checked"] > questions
    assert demo["citation_resolvability"] == 1.0
    assert demo["verbatim_share"] == 1.0
    assert demo["cross_tenant_citations"] == 0
    assert demo["refusal_correctness"] >= REFUSAL_CORRECTNESS_FLOOR, result["observations"]["demo"]
    assert demo["refusal_correctness_by_class"]["unauthorised"] == 1.0
    assert demo["recall@3"] >= 0.9
    # And the encyclopedia set is cited as verbatim and resolvably, with its near-topic unanswerable questions
    # refused at least as often as measured
    written = result["report"]["encyclopedia"]
    assert written["citation_resolvability"] == 1.0 and written["verbatim_share"] == 1.0
    assert written["cross_tenant_citations"] == 0
    by_class = written["refusal_correctness_by_class"]
    assert by_class["unanswerable"] >= ENCYCLOPEDIA_UNANSWERABLE_FLOOR, result["observations"]["encyclopedia"]
    assert by_class["answerable"] >= 0.9
