"""The console's words for the API's vocabularies (state.js STAGES, answer.js FACTOR_NAMES) name every value
the API sends and no other: a state or factor added or renamed on the server fails here, not in a person's tab.
The accepted upload types are not copied at all (GET /v1/meta)."""

import re
from pathlib import Path

from functions.views.answers import ConfidenceFactorsView
from shared.domain.files import ProcessingState

CONSOLE = Path(__file__).resolve().parents[2] / "console"


def object_keys(module: str, name: str) -> set[str]:
    """The keys of `const NAME = { key: "words", ... };` in a console module."""
    source = (CONSOLE / module).read_text(encoding="utf-8")
    body = re.search(rf"const {name} = \{{(.*?)\n\}};", source, re.DOTALL)
    assert body is not None, f"{module} has no `const {name} = {{...}};`"
    return set(re.findall(r"^\s*(\w+):", body.group(1), re.MULTILINE))


def test_the_console_names_every_processing_state() -> None:
    assert object_keys("state.js", "STAGES") == {state.value for state in ProcessingState}


def test_the_console_names_every_confidence_factor_as_the_api_sends_it() -> None:
    sent = {field.alias or name for name, field in ConfidenceFactorsView.model_fields.items()}
    assert object_keys("answer.js", "FACTOR_NAMES") == sent


def test_the_console_copies_no_list_of_accepted_types() -> None:
    # A copy of the list would name the office formats; the console names none of them.
    for module in CONSOLE.glob("*.js"):
        assert "application/vnd.openxmlformats" not in module.read_text(encoding="utf-8"), module.name
