"""The synthesized stack deployed into moto's CloudFormation, and what CloudFormation resolved read back.

`create_stack` resolves every Ref, GetAtt, Join and Sub of the template as CloudFormation would: the state
machine's definition with its functions' ARNs, each function's environment and role, each role's policies. A
resource type moto's CloudFormation cannot create is taken out first and something stands in for it
(`StandIn`, listed by `stand_ins`); a reference to it resolves to a stand-in value of the same shape, and the
resource policies among them (bucket, queue and topic policies) are still resolved by CloudFormation, through
the stack's outputs, and applied or kept for `tests/infra/policy_evaluation.py`. docs/testing.md, "The stack
deployed into moto".
"""

import hashlib
import json
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"

# What stands in for each resource type moto's CloudFormation cannot create (and for custom resources, whose
# provider functions would run at deploy time). A type missing here fails the deployment: say what replaces it.
STAND_INS: Mapping[str, str] = {
    "AWS::S3::BucketPolicy": "resolved by CloudFormation through an output and applied by the IAM judge (moto's S3 "
    "would read every condition in it as an explicit Deny)",
    "AWS::SQS::QueuePolicy": "resolved by CloudFormation through an output (not judged here: asserted on the template)",
    "AWS::SNS::TopicPolicy": "resolved by CloudFormation through an output (not judged here: asserted on the template)",
    "AWS::RDS::DBCluster": "the embedded PostgreSQL, migrated by the test's fixture",
    "AWS::RDS::DBProxy": "the embedded PostgreSQL, reached as the application role with a password that stands for "
    "the IAM token (given only when the role may rds-db:connect)",
    "AWS::RDS::DBProxyTargetGroup": "the embedded PostgreSQL",
    "AWS::RDS::DBInstance": "the embedded PostgreSQL (moto creates an Aurora cluster's instance only with its cluster)",
    "AWS::RDS::DBClusterParameterGroup": "the embedded PostgreSQL's own settings",
    "AWS::SecretsManager::Secret": "the embedded PostgreSQL's owner URL, held by the test",
    "AWS::SecretsManager::SecretTargetAttachment": "the embedded PostgreSQL's owner URL, held by the test",
    "AWS::Cognito::UserPool": "tokens the test mints (the API's claims arrive as API Gateway's authorizer sets them)",
    "AWS::Cognito::UserPoolClient": "tokens the test mints",
    "AWS::Cognito::UserPoolDomain": "tokens the test mints",
    "AWS::Cognito::UserPoolResourceServer": "tokens the test mints",
    "AWS::ApiGatewayV2::Api": "the API function invoked with API Gateway's HTTP API event (payload 2.0)",
    "AWS::ApiGatewayV2::Authorizer": "the JWT authorizer's claims put in the event by the test",
    "AWS::ApiGatewayV2::Integration": "the API function invoked directly",
    "AWS::ApiGatewayV2::Route": "the API function invoked directly",
    "AWS::ApiGatewayV2::Stage": "the API function invoked directly",
    "AWS::CloudFront::Distribution": "none: the console is tested in Chromium against the local stack",
    "AWS::CloudFront::Function": "none: its code is tested on its own (tests/infra/test_console.py)",
    "AWS::CloudFront::OriginAccessControl": "none: the console is not served here",
    "AWS::CloudFront::ResponseHeadersPolicy": "none: asserted on the template (tests/infra/test_console.py)",
    "AWS::CloudWatch::Alarm": "none: asserted on the template (tests/infra/test_observability.py)",
    "AWS::Logs::MetricFilter": "none: asserted on the template (tests/infra/test_events.py)",
    "AWS::Lambda::EventInvokeConfig": "none: asynchronous retries are asserted on the template",
    "AWS::EC2::SecurityGroupEgress": "none: moto does not filter traffic; asserted on the template",
    "AWS::Scheduler::Schedule": "the test invokes the reconcile function as the schedule would",
    "AWS::GuardDuty::MalwareProtectionPlan": "the malware verdict function invoked with GuardDuty's event",
    "Custom::S3AutoDeleteObjects": "none: the stack is not deleted here",
    "Custom::S3BucketNotifications": "the test delivers S3's Object Created event as EventBridge would",
    "Custom::CDKBucketDeployment": "none: the console's files are not served here",
    "Custom::QuireMigrations": "the migrations applied by the test's fixture (migrations/runner.py)",
    "Custom::QuireCognitoSigningKeys": "none: the MCP function's token checks are tested against a local key set",
}
# Types moto's CloudFormation knows but cannot create as this template declares them.
_NOT_CREATABLE = frozenset({"AWS::RDS::DBInstance"})
# Resource policies whose document CloudFormation still resolves (as an output) for the offline evaluator.
_POLICY_TARGETS = {
    "AWS::S3::BucketPolicy": "Bucket",
    "AWS::SQS::QueuePolicy": "Queues",
    "AWS::SNS::TopicPolicy": "Topics",
}
# The service and resource-type prefix of each stood-in ARN, as AWS writes them.
_ARN_SERVICE = {
    "AWS::Cognito::UserPool": ("cognito-idp", "userpool/"),
    "AWS::RDS::DBProxy": ("rds", "db-proxy:"),
    "AWS::RDS::DBCluster": ("rds", "cluster:"),
    "AWS::SecretsManager::Secret": ("secretsmanager", "secret:"),
}


def _kms_tags(properties: dict[str, Any]) -> dict[str, Any]:
    # moto 5.2 creates a key from CloudFormation with KMS's API tag shape (TagKey/TagValue), not CloudFormation's.
    tags = [{"TagKey": tag["Key"], "TagValue": tag["Value"]} for tag in properties.get("Tags", [])]
    return {**properties, "Tags": tags}


def _pattern_text(properties: dict[str, Any]) -> dict[str, Any]:
    # moto 5.2 parses an archive's EventPattern as JSON text; CloudFormation takes it as an object too.
    pattern = properties.get("EventPattern")
    return {**properties, "EventPattern": json.dumps(pattern)} if isinstance(pattern, dict) else properties


# Properties reshaped for a moto quirk; the resource is still created from what the template declares.
_MOTO_QUIRKS: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "AWS::KMS::Key": _kms_tags,
    "AWS::Events::Archive": _pattern_text,
}


@dataclass(frozen=True)
class StandIn:
    logical_id: str
    resource_type: str
    stood_in_by: str


@dataclass
class Fitted:
    """The template as moto can create it, what was taken out, and the outputs that carry its policies."""

    template: dict[str, Any]
    stand_ins: list[StandIn]
    policy_outputs: dict[str, tuple[str, str]] = field(default_factory=dict)  # output -> (logical id, type)
    # Every value a reference to a taken-out resource resolved to.
    stand_in_values: set[str] = field(default_factory=set)


def stand_in_value(logical_id: str, resource_type: str, attribute: str | None = None) -> str:
    """A value of a taken-out resource's shape: its ARN for `Arn` (with the resource id AWS puts there where it
    is not the name: a proxy's `prx-…`, a secret's random suffix), a host name for an endpoint, else an id. A
    reference built from the wrong one of those resolves differently here, as on AWS."""
    name = f"{logical_id.lower()}-stand-in"
    generated = hashlib.sha256(logical_id.encode()).hexdigest()[:17]
    if attribute is None:
        return name
    if attribute.endswith("Arn") or attribute == "Arn":
        service, kind = _ARN_SERVICE.get(resource_type, (resource_type.split("::")[1].lower(), "resource:"))
        resource = {
            "AWS::RDS::DBProxy": f"prx-{generated}",
            "AWS::SecretsManager::Secret": f"{name}-{generated[:6]}",
            "AWS::Cognito::UserPool": f"{REGION}_{generated[:9]}",
        }.get(resource_type, name)
        return f"arn:aws:{service}:{REGION}:{ACCOUNT}:{kind}{resource}"
    if attribute.endswith("Port"):
        return "5432"  # the template's only ports are the database's
    if "Endpoint" in attribute or attribute.endswith(("DomainName", "Address")):
        # A name in a reserved domain: nothing here ever connects to it (the harness supplies the stand-in).
        return f"{name}.invalid"
    return f"{name}-{attribute.lower()}"


def fit_for_moto(template: Mapping[str, Any], supported: Callable[[str], bool]) -> Fitted:
    """The template with every resource moto cannot create taken out (each needs a `STAND_INS` entry)."""
    resources: dict[str, Any] = template["Resources"]
    out = {
        lid: r
        for lid, r in resources.items()
        if r["Type"].startswith("Custom::") or r["Type"] in _NOT_CREATABLE or not supported(r["Type"])
    }
    unknown = sorted({r["Type"] for r in out.values()} - set(STAND_INS))
    if unknown:
        raise NotImplementedError(f"moto's CloudFormation cannot create {unknown}: add what stands in to STAND_INS")
    kept = {lid: r for lid, r in resources.items() if lid not in out}

    values: set[str] = set()

    def substituted(value: str) -> str:
        values.add(value)
        return value

    def replaced(value: Any) -> Any:
        if isinstance(value, list):
            return [replaced(item) for item in value]
        if not isinstance(value, dict):
            return value
        if set(value) == {"Ref"} and value["Ref"] in out:
            return substituted(stand_in_value(value["Ref"], out[value["Ref"]]["Type"]))
        if set(value) == {"Fn::GetAtt"} and value["Fn::GetAtt"][0] in out:
            logical_id, attribute = value["Fn::GetAtt"][0], value["Fn::GetAtt"][1]
            return substituted(stand_in_value(logical_id, out[logical_id]["Type"], attribute))
        if set(value) == {"Fn::Sub"} and isinstance(value["Fn::Sub"], str):
            return {"Fn::Sub": _sub_replaced(value["Fn::Sub"], out)}
        return {key: replaced(item) for key, item in value.items()}

    fitted_resources = {}
    for logical_id, declared in kept.items():
        resource = replaced(declared)
        quirk = _MOTO_QUIRKS.get(resource["Type"])
        if quirk is not None:
            resource["Properties"] = quirk(resource.get("Properties", {}))
        depends = resource.pop("DependsOn", None)
        if depends is not None:
            remaining = [d for d in ([depends] if isinstance(depends, str) else depends) if d not in out]
            if remaining:
                resource["DependsOn"] = remaining
        fitted_resources[logical_id] = resource
    outputs = {name: replaced(o) for name, o in template.get("Outputs", {}).items()}
    policy_outputs: dict[str, tuple[str, str]] = {}
    for logical_id, resource in out.items():
        target = _POLICY_TARGETS.get(resource["Type"])
        if target is None:
            continue
        properties = replaced(resource["Properties"])
        outputs[f"StandIn{logical_id}"] = {"Value": json_text(properties["PolicyDocument"])}
        outputs[f"StandIn{logical_id}Target"] = {"Value": json_text(properties[target])}
        policy_outputs[f"StandIn{logical_id}"] = (logical_id, resource["Type"])
    fitted = {k: v for k, v in template.items() if k not in ("Resources", "Outputs", "Rules")}
    fitted["Resources"] = fitted_resources
    fitted["Outputs"] = outputs
    fitted.get("Parameters", {}).pop("BootstrapVersion", None)
    stand_ins = [StandIn(lid, r["Type"], STAND_INS[r["Type"]]) for lid, r in sorted(out.items())]
    return Fitted(fitted, stand_ins, policy_outputs, values)


def _sub_replaced(text: str, out: Mapping[str, Any]) -> str:
    for logical_id, resource in out.items():
        text = text.replace("${" + logical_id + "}", stand_in_value(logical_id, resource["Type"]))
        prefix = "${" + logical_id + "."
        while prefix in text:
            start = text.index(prefix)
            end = text.index("}", start)
            attribute = text[start + len(prefix) : end]
            text = text[:start] + stand_in_value(logical_id, resource["Type"], attribute) + text[end + 1 :]
    return text


def json_text(value: Any) -> Any:
    """`value` (JSON with intrinsics in it) as an `Fn::Join` that CloudFormation resolves to its JSON text."""
    intrinsics: list[Any] = []

    def marked(item: Any) -> Any:
        if isinstance(item, dict) and len(item) == 1 and next(iter(item)).startswith(("Fn::", "Ref")):
            intrinsics.append(item)
            return f"\x00{len(intrinsics) - 1}\x00"
        if isinstance(item, dict):
            return {key: marked(v) for key, v in item.items()}
        if isinstance(item, list):
            return [marked(v) for v in item]
        return item

    text = json.dumps(marked(value), separators=(",", ":"))
    pieces = text.split("\\u0000")
    # Pieces alternate: literal text, an intrinsic's index, literal text, ...
    parts: list[Any] = []
    for index, piece in enumerate(pieces):
        parts.append(intrinsics[int(piece)] if index % 2 else piece)
    return {"Fn::Join": ["", [p for p in parts if p != ""]]} if intrinsics else text


def upload_assets(s3: Any, outdir: Path, work: Path) -> None:
    """Every file asset of the cloud assembly into the bootstrap bucket its template names (a directory as the
    zip the CDK CLI would make of it)."""
    manifest = json.loads(next(outdir.glob("*.assets.json")).read_text(encoding="utf-8"))
    for asset_hash, asset in manifest.get("files", {}).items():
        source = outdir / asset["source"]["path"]
        body = source.read_bytes() if source.is_file() else _zipped(source, work / f"{asset_hash}.zip").read_bytes()
        for destination in asset["destinations"].values():
            bucket = destination["bucketName"].replace("${AWS::AccountId}", ACCOUNT)
            bucket = bucket.replace("${AWS::Region}", REGION).replace("${AWS::Partition}", "aws")
            if bucket not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
                s3.create_bucket(Bucket=bucket)
            s3.put_object(Bucket=bucket, Key=destination["objectKey"], Body=body)


def _zipped(directory: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(directory))
    return target


@dataclass(frozen=True)
class DeployedFunction:
    """A function as CloudFormation created it: its name, handler, environment and role, all resolved."""

    logical_id: str
    name: str
    arn: str
    handler: str
    environment: dict[str, str]
    role_arn: str

    @property
    def role_name(self) -> str:
        return self.role_arn.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class ResourcePolicy:
    logical_id: str
    resource_type: str
    targets: list[str]
    document: dict[str, Any]


@dataclass
class DeployedStack:
    """What moto's CloudFormation resolved: physical ids, outputs, functions, the state machine's definition,
    and the resource policies of the resources that stood in."""

    name: str
    outputs: dict[str, str]
    physical_ids: dict[str, str]
    functions: dict[str, DeployedFunction]
    state_machine_arn: str
    state_machine_role_arn: str
    definition: dict[str, Any]
    stand_ins: list[StandIn]
    resource_policies: list[ResourcePolicy]
    named_log_groups: list[str]
    # Every value a reference to a stood-in resource resolved to.
    stand_in_values: set[str]

    def database_user_arn(self, user: str) -> str:
        """The rds-db:connect resource of `user` on the database proxy (which stands in: its resource id is the
        stand-in's, as the roles' policies name it)."""
        (proxy,) = [s for s in self.stand_ins if s.resource_type == "AWS::RDS::DBProxy"]
        resource_id = stand_in_value(proxy.logical_id, proxy.resource_type, "DBProxyArn").split(":")[6]
        return f"arn:aws:rds-db:{REGION}:{ACCOUNT}:dbuser:{resource_id}/{user}"

    def release_names(self, logs: Any) -> None:
        """Delete the log groups the template names itself, which another deployment in this account would
        create again (moto's delete_stack stops at the VPC's dependencies, so the stack itself stays)."""
        for name in self.named_log_groups:
            logs.delete_log_group(logGroupName=name)

    def function(self, handler: str) -> DeployedFunction:
        """The one function running `handler` (a dotted path, as infra/ names it)."""
        (found,) = [f for f in self.functions.values() if f.handler == handler]
        return found

    def bucket_policy(self, bucket: str) -> list[dict[str, Any]]:
        return [
            statement
            for policy in self.resource_policies
            if policy.resource_type == "AWS::S3::BucketPolicy" and bucket in policy.targets
            for statement in policy.document["Statement"]
        ]


def deploy(
    outdir: Path,
    work: Path,
    *,
    supported: Callable[[str], bool],
    clients: Callable[[str], Any],
    stack_name: str | None = None,
) -> DeployedStack:
    """Deploy the cloud assembly in `outdir` (one stack, synthesized without the bootstrap rule) into moto:
    assets uploaded, `create_stack` from the template's S3 URL as the CDK CLI does, and read back.
    `clients(service)` gives a client of the (mocked) account; `stack_name` keeps two deployments in one
    account apart (the template's own name by default)."""
    (template_path,) = outdir.glob("*.template.json")
    stack_name = stack_name or template_path.name.removesuffix(".template.json")
    fitted = fit_for_moto(json.loads(template_path.read_text(encoding="utf-8")), supported)
    s3, cloudformation = clients("s3"), clients("cloudformation")
    upload_assets(s3, outdir, work)
    templates = f"{stack_name.lower()}-templates"
    s3.create_bucket(Bucket=templates)
    s3.put_object(Bucket=templates, Key=template_path.name, Body=json.dumps(fitted.template).encode())
    cloudformation.create_stack(
        StackName=stack_name,
        TemplateURL=f"https://{templates}.s3.amazonaws.com/{template_path.name}",
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    (stack,) = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    if stack["StackStatus"] != "CREATE_COMPLETE":
        raise AssertionError(f"{stack_name}: {stack['StackStatus']} {stack.get('StackStatusReason')}")
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    summaries = cloudformation.list_stack_resources(StackName=stack_name)["StackResourceSummaries"]
    physical_ids = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in summaries}
    resources = fitted.template["Resources"]
    lambda_ = clients("lambda")
    functions = {}
    for logical_id, resource in resources.items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        configuration = lambda_.get_function_configuration(FunctionName=physical_ids[logical_id])
        functions[logical_id] = DeployedFunction(
            logical_id=logical_id,
            name=configuration["FunctionName"],
            arn=configuration["FunctionArn"],
            handler=configuration["Handler"],
            environment=configuration.get("Environment", {}).get("Variables", {}),
            role_arn=configuration["Role"],
        )
    (machine_id,) = [lid for lid, r in resources.items() if r["Type"] == "AWS::StepFunctions::StateMachine"]
    machine_arn = physical_ids[machine_id]
    # moto's CloudFormation creates state machines in its non-executing backend; the definition it resolved is
    # read there, and created again through the API (same name, so the same ARN) where it executes.
    from moto.stepfunctions.models import stepfunctions_backends

    resolved = stepfunctions_backends[ACCOUNT][REGION].describe_state_machine(machine_arn)
    policies = [
        ResourcePolicy(
            logical_id=logical_id,
            resource_type=resource_type,
            targets=_listed(json.loads(outputs[f"{output}Target"])),
            document=json.loads(outputs[output]),
        )
        for output, (logical_id, resource_type) in fitted.policy_outputs.items()
    ]
    return DeployedStack(
        name=stack_name,
        outputs={k: v for k, v in outputs.items() if not k.startswith("StandIn")},
        physical_ids=physical_ids,
        functions=functions,
        state_machine_arn=machine_arn,
        state_machine_role_arn=resolved.roleArn,
        definition=json.loads(resolved.definition),
        stand_ins=fitted.stand_ins,
        resource_policies=policies,
        stand_in_values=fitted.stand_in_values,
        named_log_groups=[
            r["Properties"]["LogGroupName"]
            for r in resources.values()
            if r["Type"] == "AWS::Logs::LogGroup" and isinstance(r["Properties"].get("LogGroupName"), str)
        ],
    )


def _listed(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]
