"""The step contract as deployed: every JSONPath in the synthesized state machine names a field of the model
the state reads, and the state machine has the graph's steps, choices, wait and map (shared/domain/steps.py)."""

import importlib
import re
from collections.abc import Iterator
from typing import Any

import pytest
from aws_cdk.assertions import Template
from pydantic import BaseModel

from infra.constructs.pipeline_steps import STEPS
from shared.domain.steps import (
    PIPELINE,
    CaughtError,
    CaughtFailure,
    ForEach,
    StepName,
    WaitThen,
)
from tests.infra.synthesis import state_machine_definition


class _ArnOf(dict[str, str]):
    def __missing__(self, logical_id: str) -> str:
        return f"arn:aws:lambda:eu-west-1:123456789012:function:{logical_id}"


def _states(definition: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every state, those inside a Map's processor too."""
    for name, state in definition["States"].items():
        yield name, state
        if state["Type"] == "Map":
            yield from _states(state["ItemProcessor"])


def _resolves(model: type[BaseModel], path: str) -> bool:
    """Whether `$.a.b` names field `a` of `model` (by its wire name) and, when `a` is a model, `b` of that."""
    assert path.startswith("$."), path
    head, _, rest = path[2:].partition(".")
    for name, field in model.model_fields.items():
        if (field.alias or name) != head:
            continue
        if not rest:
            return True
        nested = field.annotation
        return isinstance(nested, type) and issubclass(nested, BaseModel) and _resolves(nested, f"$.{rest}")
    return False


def _choice_paths(choice: dict[str, Any]) -> Iterator[str]:
    for rule in choice.get("Choices", []):
        yield from _rule_paths(rule)


def _rule_paths(rule: dict[str, Any]) -> Iterator[str]:
    if "Variable" in rule:
        yield rule["Variable"]
    for nested in (rule.get("Not"), *rule.get("And", []), *rule.get("Or", [])):
        if nested:
            yield from _rule_paths(nested)


@pytest.fixture
def definition(synthesized: tuple[str, Template]) -> dict[str, Any]:
    return state_machine_definition(synthesized[1], _ArnOf())[0]


def test_every_choice_reads_fields_of_the_output_of_the_step_before_it(definition: dict[str, Any]) -> None:
    states = dict(_states(definition))
    choices = {spec.choice: spec for spec in PIPELINE.steps if spec.choice}
    assert {name for name, state in states.items() if state["Type"] == "Choice"} == set(choices)
    for name, spec in choices.items():
        paths = list(_choice_paths(states[name]))
        # Given the Choice after a step, each of its routes tests a field of that step's output model
        assert len(paths) == len(spec.routes), name
        assert [path for path in paths if not _resolves(spec.returns, path)] == [], name


def test_the_map_reads_its_items_and_references_from_the_output_it_follows(definition: dict[str, Any]) -> None:
    states = dict(_states(definition))
    (each,) = [target for spec in PIPELINE.steps for _, target in spec.routes if isinstance(target, ForEach)]
    (after,) = [spec for spec in PIPELINE.steps for _, target in spec.routes if target == each]
    item_model = PIPELINE.spec(each.step).reads
    mapped = states[each.name]
    assert _resolves(after.returns, mapped["ItemsPath"])
    selector = mapped["ItemSelector"]
    # Every key is a field of the item step's input; every value a field of the state or the Map's item.
    assert sorted(key.removesuffix(".$") for key in selector) == sorted(
        field.alias or name for name, field in item_model.model_fields.items()
    )
    for value in selector.values():
        assert value == "$$.Map.Item.Value" or _resolves(after.returns, value), value


def test_every_catch_and_the_failure_state_write_and_read_fields_of_the_caught_failure(
    definition: dict[str, Any],
) -> None:
    states = dict(_states(definition))
    catches = [catch for state in states.values() for catch in state.get("Catch", [])]
    recorded_by = states["Record failure"]
    step_catches = [catch for catch in catches if catch not in recorded_by.get("Catch", [])]
    assert step_catches and all(_resolves(CaughtFailure, catch["ResultPath"]) for catch in step_catches)
    passes = [state for name, state in states.items() if name.endswith(" failed")]
    assert passes and all(_resolves(CaughtFailure, state["ResultPath"]) for state in passes)
    failure = states["Infrastructure failure"]
    assert _resolves(CaughtFailure, failure["ErrorPath"]) and _resolves(CaughtFailure, failure["CausePath"])
    assert failure["ErrorPath"].endswith(CaughtError.model_fields["error"].alias or "")


def test_the_state_machine_has_the_graphs_steps_wait_and_map(definition: dict[str, Any]) -> None:
    states = dict(_states(definition))
    tasks = {name for name, state in states.items() if state["Type"] == "Task" and name != "Record failure"}
    assert tasks == {spec.name.value for spec in PIPELINE.steps}
    assert definition["StartAt"] == PIPELINE.first.value
    waits = {target.name for spec in PIPELINE.steps for _, target in spec.routes if isinstance(target, WaitThen)}
    maps = {target.name for spec in PIPELINE.steps for _, target in spec.routes if isinstance(target, ForEach)}
    assert {name for name, state in states.items() if state["Type"] == "Wait"} == waits
    assert {name for name, state in states.items() if state["Type"] == "Map"} == maps


@pytest.mark.parametrize("name", list(StepName), ids=str)
def test_every_step_has_a_function_whose_handler_reads_the_graphs_model(name: StepName) -> None:
    (step,) = [step for step in STEPS if step.name == name]
    module_name, _, attribute = step.handler.rpartition(".")
    assert re.fullmatch(r"functions\.\w+\.handler", module_name)
    handler = getattr(importlib.import_module(module_name), attribute)
    # The handler parses its event as the model the graph says the step reads.
    assert handler.reads is PIPELINE.spec(name).reads
