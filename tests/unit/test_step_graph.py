"""The step graph without the CDK: every step's outcome is read by whatever follows it (the next step, the
poll after a Wait, the Map's items, the Catch), the fields a Choice tests are always there, and the pipeline
has a step for every node of the graph (tests/infra/test_step_contract.py checks the synthesized state
machine's JSONPaths against the same models)."""

import typing
import uuid
from typing import Any

import pytest
from pydantic import BaseModel

from shared.domain.attempt_work import WorkVersions
from shared.domain.files import FailureReason
from shared.domain.knowledge import IndexWrite
from shared.domain.recognition import RecognitionJob
from shared.domain.steps import (
    DONE,
    PIPELINE,
    CaughtFailure,
    Chunked,
    Claimed,
    Embedded,
    Extracted,
    ForEach,
    Halt,
    Indexed,
    InterruptionRecorded,
    Published,
    Recognized,
    StepInput,
    StepName,
    StepOutcome,
    Target,
    WaitThen,
)
from tests.fakes import Fakes

REQUEST = StepInput(tenant_id="acme", file_id="f-1", version_id="v-1", attempt=3, rescan=True)
# Outcomes with their optional fields absent and present, nested models with None values included: what
# `to_state` leaves out must not be something the next step requires.
JOB = RecognitionJob(engine="textract", job_id="job-1", analysis=True, pages=(2, 3), staged_key=None)
UNVERSIONED_WORK = WorkVersions(manifest=None, chunks=(None, None), vectors=(None, None))
EXAMPLES: dict[type[StepOutcome], list[StepOutcome]] = {
    Claimed: [
        Claimed.going_on(REQUEST, media_type="application/pdf", byte_size=10),
        Claimed.halted(REQUEST, Halt.NOT_QUEUED),
    ],
    Extracted: [
        Extracted.going_on(REQUEST, blocks=4, recognize=True),
        Extracted.going_on(REQUEST, blocks=4),
        Extracted.halted(REQUEST, None, failure=FailureReason.MALFORMED),
    ],
    Recognized: [
        Recognized.going_on(REQUEST, ocr_job=JOB),
        Recognized.going_on(REQUEST, ocr_job=JOB, ocr_polls=7),
        Recognized.going_on(REQUEST, blocks=9),
        Recognized.halted(REQUEST, Halt.NOT_HELD),
    ],
    Chunked: [Chunked.going_on(REQUEST, chunks=300, batches=(0, 1, 2)), Chunked.halted(REQUEST, Halt.NOT_HELD)],
    Embedded: [Embedded.going_on(REQUEST, batch=2, embedded=128)],
    Indexed: [
        Indexed.going_on(REQUEST, indexed=True, chunks=300, work=UNVERSIONED_WORK),
        Indexed.halted(REQUEST, Halt.NOT_WRITTEN, written=IndexWrite.SUPERSEDED, work=UNVERSIONED_WORK),
        Indexed.halted(REQUEST, Halt.NOT_HELD),
    ],
    Published: [Published.halted(REQUEST, None, processing="indexed")],
    InterruptionRecorded: [InterruptionRecorded.halted(REQUEST, None, interrupted=True, step="index", error="X")],
}


def _readers(target: Target) -> list[type[BaseModel]]:
    """The input models of what runs next on an outcome."""
    if target == DONE:
        return []
    if isinstance(target, WaitThen):
        return [PIPELINE.spec(target.step).reads]
    if isinstance(target, ForEach):
        return [PIPELINE.spec(target.then).reads]
    assert isinstance(target, StepName)
    return [PIPELINE.spec(target).reads]


def test_every_step_outcome_has_examples() -> None:
    assert {spec.returns for spec in (*PIPELINE.steps, PIPELINE.on_failure)} == set(EXAMPLES)


@pytest.mark.parametrize("spec", PIPELINE.steps, ids=lambda spec: spec.name.value)
def test_every_outcome_is_read_by_what_follows_it_as_the_state_machine_passes_it(spec: Any) -> None:
    for outcome in EXAMPLES[spec.returns]:
        state = outcome.to_state()
        target = spec.next(outcome)
        for reads in _readers(target):
            parsed = reads.model_validate(state)
            # The references travel unchanged, the attempt with them.
            assert parsed.model_dump(include=set(StepInput.model_fields)) == REQUEST.model_dump()
        if isinstance(target, ForEach):
            items = getattr(outcome, target.items)
            assert items, "the Map runs over a non-empty list"
            item_reads = PIPELINE.spec(target.step).reads
            (item_field,) = set(item_reads.model_fields) - set(StepInput.model_fields)
            for item in items:
                assert getattr(item_reads.model_validate({**state, item_field: item}), item_field) == item
        # Whatever the step was doing, the Catch can read its state (plus what the Catch adds).
        caught = CaughtFailure.of({**state, "failedStep": spec.name.lower(), "error": {"Error": "Boom", "Cause": None}})
        assert (caught.failed_step, caught.error.error, caught.error.cause) == (spec.name.lower(), "Boom", "")
        assert caught.work == getattr(outcome, "work", None)


def test_the_poll_after_a_wait_gets_the_job_and_its_poll_count_back() -> None:
    running = Recognized.going_on(REQUEST, ocr_job=JOB, ocr_polls=7)
    (reads,) = _readers(PIPELINE.spec(StepName.RECOGNIZE).next(running))
    polled = reads.model_validate(running.to_state())
    assert (polled.ocr_job, polled.ocr_polls) == (JOB, 7)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "when"),
    [(spec, when) for spec in PIPELINE.steps for when, _ in spec.routes],
    ids=lambda value: getattr(getattr(value, "name", None), "value", None) or getattr(value, "field", "?"),
)
def test_a_field_a_choice_tests_for_true_is_a_plain_bool_so_it_is_always_in_the_state(spec: Any, when: Any) -> None:
    annotation = spec.returns.model_fields[when.field].annotation
    if when.test == "present":
        # Tested for presence: it must be able to be absent.
        assert type(None) in typing.get_args(annotation), when.field
    else:
        assert annotation is bool, f"{spec.returns.__name__}.{when.field} may be absent: the Choice would fail"


def test_the_pipeline_runs_every_step_of_the_graph_with_the_model_the_graph_names() -> None:
    pipeline = Fakes().pipeline()
    # Given a version nobody stored: every step answers without a document problem, as its outcome model.
    nobodys = StepInput(tenant_id="acme", file_id=str(uuid.uuid4()), version_id=str(uuid.uuid4()), attempt=1)
    state: dict[str, Any] = {**nobodys.to_state(), "batch": 0, "failedStep": "index", "error": {"Error": "X"}}
    for spec in (*PIPELINE.steps, PIPELINE.on_failure):
        outcome = pipeline.step(spec.name, state)
        assert type(outcome) is spec.returns, spec.name
        assert outcome.proceed is False
