"""Synthesizing the stack for tests: the real code asset, a stand-in for the dependency layer.

The layer's contents are wheels for another platform that no template assertion reads; building the real
one (`make layer`, about a minute of pip) is left to `make synth` and `make bench`.
"""

import json
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template

from infra.app import build_app
from infra.packaging import stage_code


def stand_in_package(root: Path) -> tuple[Path, Path]:
    code = stage_code(root / "code")
    layer = root / "layer-stand-in" / "python"
    layer.mkdir(parents=True, exist_ok=True)
    (layer / "README").write_text("a stand-in for the dependency layer: template tests never read its contents\n")
    return code, layer.parent


def synthesize(env: str, root: Path, package: tuple[Path, Path]) -> Template:
    """The environment's stack, synthesized with the cdk-nag AwsSolutions checks (a finding raises)."""
    code_dir, layer_dir = package
    app, stack = build_app(env, outdir=str(root / f"cdk-{env}"), code_dir=code_dir, layer_dir=layer_dir)
    app.synth()
    return Template.from_stack(stack)


def state_machine_definition(template: Template, arn_of: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The ingestion state machine's definition as deployed, with each function's ARN replaced by
    `arn_of[logical id]`, and the handler (dotted path) of every function the definition invokes."""
    resources = template.to_json()["Resources"]
    machines = [r for r in resources.values() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    assert len(machines) == 1, "one state machine per stack"
    joined = machines[0]["Properties"]["DefinitionString"]["Fn::Join"]
    parts = []
    invoked: dict[str, str] = {}
    for part in joined[1]:
        if isinstance(part, str):
            parts.append(part)
            continue
        logical_id, attribute = part["Fn::GetAtt"]
        assert attribute == "Arn" and resources[logical_id]["Type"] == "AWS::Lambda::Function", part
        invoked[logical_id] = resources[logical_id]["Properties"]["Handler"]
        parts.append(arn_of[logical_id])
    return json.loads(joined[0].join(parts)), invoked
