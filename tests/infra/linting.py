"""What CloudFormation and Step Functions would reject, found before a deploy: cfn-lint over a synthesized
template, asl-validator (npm) over a resolved state machine definition, and the one list of findings that are
acknowledged, each with its reason.

Both checkers are plain functions so that any source can feed them: the synthesized templates of
tests/infra/conftest.py, the definition resolved with placeholder ARNs (tests/infra/synthesis.py), or one
resolved by a deployment into moto's CloudFormation. cfn-lint reads a `DefinitionString` built with `Fn::Join`
(the CDK's form whenever the definition names a resource) as an opaque string, so it never sees the ASL:
asl-validator is what checks the transitions.
"""

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfnlint.api import ManualArgs, lint_file  # type: ignore[import-untyped]

REPO_ROOT = Path(__file__).resolve().parents[2]
# Installed by `npm ci` from package-lock.json (the Makefile's NODE_INSTALLED stamp, a prerequisite of make test
# and make test-infra).
ASL_VALIDATOR = REPO_ROOT / "node_modules" / "asl-validator"

# asl-validator as a library (its CLI prints text only): the definition on stdin, its errors as JSON on stdout,
# with the validator's default options (paths and Resource ARNs checked).
_VALIDATE_ASL = """
const validate = require(process.argv[1]);
let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => process.stdout.write(JSON.stringify(validate(JSON.parse(input)).errors)));
"""


@dataclass(frozen=True)
class Finding:
    """One thing a checker would reject or warns about. `rule` is cfn-lint's rule id (E3034, W3005) or
    asl-validator's error code (MISSING_TRANSITION_TARGET); `location` is the path to the element, slash-separated
    ("Resources/<logical id>/Properties/Timeout", "/States/Inspect/Type"), empty when the checker gives none."""

    rule: str
    location: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule} at {self.location or '(definition)'}: {self.message}"


@dataclass(frozen=True)
class Acknowledged:
    """A finding accepted as it is: its rule, where (a regular expression the whole location must match) and
    what it says (a regular expression searched for in the message, where `{resource}` stands for the logical id
    the location names), and why it is not a problem."""

    rule: str
    location: str
    message: str
    reason: str

    def covers(self, finding: Finding) -> bool:
        if finding.rule != self.rule or re.fullmatch(self.location, finding.location) is None:
            return False
        parts = finding.location.split("/")
        resource = parts[1] if len(parts) > 1 and parts[0] == "Resources" else ""
        return re.search(self.message.replace("{resource}", re.escape(resource)), finding.message) is not None


# Every finding the synthesized templates and the resolved definitions are allowed to have: the one place where
# a finding is accepted. Each must still match a finding in every environment (a stale one fails the tests).
ACKNOWLEDGED: tuple[Acknowledged, ...] = (
    Acknowledged(
        rule="W3045",
        location=r"Resources/StorageAccessLogs[0-9A-F]{8}/Properties/AccessControl",
        message=r"'AccessControl' is a legacy property",
        reason=(
            "The access logs bucket keeps ACLs on (ObjectOwnership BucketOwnerPreferred) because CloudFront's "
            "standard logs for the console are delivered through an ACL grant only; the CDK gives S3's server "
            "access logs the LogDeliveryWrite canned ACL on such a bucket, which S3 still accepts and honours. "
            "A bucket policy for logging.s3.amazonaws.com instead is the app-wide feature flag "
            "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy."
        ),
    ),
    Acknowledged(
        rule="W3005",
        location=r"Resources/\w+/DependsOn/\d+",
        # The resource's own role: the one its Role (a state machine's RoleArn) names.
        message=(
            r"^'\w*Role[0-9A-F]{8}' dependency already enforced by a 'GetAtt' at "
            r"'Resources/{resource}/Properties/Role(Arn)?'$"
        ),
        reason=(
            "The CDK makes each function (and the state machine) depend on its role construct, which is the role "
            "and the role's default policy, so that the policy exists before the first invocation; the role half "
            "repeats what the GetAtt of its ARN already orders. Redundant, not wrong: CloudFormation accepts it."
        ),
    ),
    Acknowledged(
        rule="W3005",
        location=r"Resources/DatabaseProxyProxyTargetGroup[0-9A-F]{8}/DependsOn/\d+",
        message=r"^'DatabaseCluster[0-9A-F]{8}' dependency already enforced by a 'Ref' at",
        reason=(
            "The CDK's DatabaseProxy makes its target group depend on the cluster and on each of its instances, "
            "so that registration waits for an instance to be available; the cluster half repeats what the Ref "
            "in DBClusterIdentifiers already orders. Redundant, not wrong."
        ),
    ),
)


def unacknowledged(findings: list[Finding]) -> list[Finding]:
    return [finding for finding in findings if not any(ack.covers(finding) for ack in ACKNOWLEDGED)]


def unused_acknowledgements(findings: list[Finding]) -> list[Acknowledged]:
    return [ack for ack in ACKNOWLEDGED if not any(ack.covers(finding) for finding in findings)]


def cfn_lint_findings(template_path: Path) -> list[Finding]:
    """cfn-lint's errors and warnings (its default rules, us-east-1's resource schemas) for one template.

    Through its Python API: a template of Quire's size is about 4 s there against about 10 s through the CLI."""
    matches = lint_file(template_path, config=ManualArgs())
    return [
        Finding(rule=str(match.rule.id), location="/".join(map(str, match.path)), message=str(match.message))
        for match in matches
    ]


def asl_findings(definition: dict[str, Any]) -> list[Finding]:
    """asl-validator's errors for one state machine definition with its ARNs resolved: the JSON schema of the
    Amazon States Language, then (when the schema holds) the transitions: a Next, Default or StartAt naming no
    state, a state nothing reaches, no terminal state, duplicate names."""
    node = shutil.which("node")
    assert node is not None, "asl-validator needs node (20 or later) on the PATH"
    assert ASL_VALIDATOR.is_dir(), f"{ASL_VALIDATOR} is missing: `npm ci` installs it (make test-infra runs it)"
    ran = subprocess.run(
        [node, "-e", _VALIDATE_ASL, str(ASL_VALIDATOR)],
        input=json.dumps(definition),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, f"asl-validator did not run:\n{ran.stderr}"
    errors: list[dict[str, Any]] = json.loads(ran.stdout)
    return [
        Finding(
            rule=str(error["Error code"]),
            location=str(error.get("schemaError", {}).get("instancePath", "")),
            message=str(error["Message"]),
        )
        for error in errors
    ]
