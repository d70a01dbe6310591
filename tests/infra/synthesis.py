"""Synthesizing the stack for tests: the real code asset, stand-ins for the dependency layer and the console.

The layer's contents are wheels for another platform that no template assertion reads; building the real
one (`make layer`, about a minute of pip) is left to `make synth` and `make bench`. The console's files are
deployed as they are, so a stand-in directory serves as well (and console/ need not exist for these tests).
"""

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template

from infra.app import build_app
from infra.environments import settings_for
from infra.packaging import stage_code


def stand_in_package(root: Path) -> tuple[Path, Path]:
    code = stage_code(root / "code")
    layer = root / "layer-stand-in" / "python"
    layer.mkdir(parents=True, exist_ok=True)
    (layer / "README").write_text("a stand-in for the dependency layer: template tests never read its contents\n")
    return code, layer.parent


def synthesized_dev(root: Path, package_dirs: tuple[Path, Path], **changes: Any) -> Template:
    """The dev stack with `changes` to its settings, synthesized in `root` with the cdk-nag checks (a finding
    raises)."""
    code_dir, layer_dir = package_dirs
    app, stack = build_app(
        "dev",
        outdir=str(root),
        code_dir=code_dir,
        layer_dir=layer_dir,
        console_dir=stand_in_console(root),
        settings=dataclasses.replace(settings_for("dev"), **changes),
    )
    app.synth()
    return Template.from_stack(stack)


def stand_in_console(root: Path) -> Path:
    """A console directory: an index.html and a module, and a config.json of the local stack's kind, which the
    deployment must leave out (it writes its own)."""
    console = root / "console-stand-in"
    console.mkdir(parents=True, exist_ok=True)
    (console / "index.html").write_text(
        '<!doctype html><title>stand-in</title><script type="module" src="app.js"></script>\n'
    )
    (console / "app.js").write_text("// a stand-in for the console: template tests never run it\n")
    (console / "config.json").write_text('{"apiBase": "", "auth": {"kind": "local"}}\n')
    return console


@dataclass(frozen=True)
class Synthesis:
    env: str
    template: Template
    # The cloud assembly: the template and the staged assets (the console's files, its config.json).
    outdir: Path


def synthesize_assembly(
    env: str,
    root: Path,
    package: tuple[Path, Path],
    console_dir: Path | None = None,
    *,
    bootstrap_rule: bool = True,
) -> Synthesis:
    """The environment's stack, synthesized with the cdk-nag AwsSolutions checks (a finding raises)."""
    code_dir, layer_dir = package
    outdir = root / f"cdk-{env}"
    app, stack = build_app(
        env,
        outdir=str(outdir),
        code_dir=code_dir,
        layer_dir=layer_dir,
        console_dir=console_dir or stand_in_console(root),
        bootstrap_rule=bootstrap_rule,
    )
    app.synth()
    return Synthesis(env=env, template=Template.from_stack(stack), outdir=outdir)


def synthesize(env: str, root: Path, package: tuple[Path, Path], console_dir: Path | None = None) -> Template:
    return synthesize_assembly(env, root, package, console_dir).template


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
