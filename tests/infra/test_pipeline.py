"""The ingestion state machine and what starts it, as synthesized (see test_state_machine.py in
tests/integration for the same definition executed)."""

import json
from collections.abc import Iterator, Mapping
from typing import Any

from aws_cdk.assertions import Match, Template

from infra.constructs.pipeline_steps import TRANSCRIPTION_JOB_PREFIX
from infra.environments import settings_for
from tests.infra.synthesis import state_machine_definition
from tests.infra.template import as_list, as_text, only, statements_of_role

RETRIED = {
    "InfrastructureUnavailable",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
    "Sandbox.Timedout",
    "States.Timeout",
    "Lambda.Unknown",
}
TENANT = "${aws:PrincipalTag/tenant}"
DATA_SERVICES = (
    "s3:",
    "rds-db:",
    "rds:",
    "bedrock:",
    "secretsmanager:",
    "kms:",
    "sqs:",
    "states:",
    "textract:",
    "transcribe:",
)
TRANSCRIBE_ACTIONS = {
    "transcribe:StartTranscriptionJob",
    "transcribe:GetTranscriptionJob",
    "transcribe:DeleteTranscriptionJob",
}


class _Placeholder(dict[str, str]):
    def __missing__(self, logical_id: str) -> str:
        return f"arn:aws:lambda:us-east-1:123456789012:function:{logical_id}"


def definition(template: Template) -> dict[str, Any]:
    return state_machine_definition(template, _Placeholder())[0]


def states(machine: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every state, those inside a Map's item processor included."""
    for name, state in machine["States"].items():
        yield name, state
        if state["Type"] == "Map":
            yield from states(state.get("ItemProcessor") or state["Iterator"])


def resources(template: Template, kind: str) -> Mapping[str, Mapping[str, Any]]:
    return template.find_resources(kind)


def function_logical_id(template: Template, handler: str) -> str:
    (logical_id,) = [
        logical_id
        for logical_id, function in resources(template, "AWS::Lambda::Function").items()
        if function["Properties"].get("Handler") == handler
    ]
    return logical_id


def role_statements(template: Template, function_id: str) -> list[dict[str, Any]]:
    role = template.to_json()["Resources"][function_id]["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return statements


def actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return action if isinstance(action, list) else [action]


def test_the_state_machine_is_standard_traced_and_logged(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    template.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineType": "STANDARD",
            "TracingConfiguration": {"Enabled": True},
            "LoggingConfiguration": Match.object_like({"Level": "ALL", "IncludeExecutionData": False}),
        },
    )


def test_the_steps_run_in_order_with_ocr_and_the_embed_map_on_their_branches(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    machine = definition(template)
    s = machine["States"]
    assert machine["StartAt"] == "Inspect" and machine["TimeoutSeconds"] == 6 * 3600
    assert s["Inspect"]["Next"] == "Claimed?" and s["Claimed?"]["Default"] == "Extract"
    # A re-index starts from the stored document: straight to chunking, nothing extracted or OCR'd again.
    assert {"Variable": "$.reindex", "BooleanEquals": True, "Next": "Chunk"} in s["Claimed?"]["Choices"]
    extracted = s["Extracted?"]["Choices"]
    assert {"Variable": "$.recognize", "BooleanEquals": True, "Next": "Recognize"} in extracted
    assert s["Extracted?"]["Default"] == "Chunk"
    recognized = s["Recognized?"]["Choices"]
    assert {"Variable": "$.ocrJob", "IsPresent": True, "Next": "Wait for OCR"} in recognized
    assert s["Wait for OCR"] == {"Type": "Wait", "Seconds": 10, "Next": "Recognize"}
    # A recording's transcription job is polled the same way.
    assert {"Variable": "$.transcriptionJob", "IsPresent": True, "Next": "Wait for transcription"} in recognized
    assert s["Wait for transcription"] == {"Type": "Wait", "Seconds": 10, "Next": "Recognize"}
    assert s["Recognized?"]["Default"] == "Chunk"
    embed_map = s["Embed batches"]
    assert embed_map["Type"] == "Map" and embed_map["ItemsPath"] == "$.batches"
    assert embed_map["ItemSelector"]["batch.$"] == "$$.Map.Item.Value"
    assert embed_map["ResultPath"] is None and embed_map["MaxConcurrency"] == 4
    assert embed_map["Next"] == "Index" and s["Index"]["Next"] == "Publish" and s["Publish"]["Next"] == "Done"


def test_every_task_has_a_timeout_retries_infrastructure_errors_only_and_records_what_it_catches(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    machine = definition(template)
    tasks = {name: state for name, state in states(machine) if state["Type"] == "Task"}
    assert set(tasks) == {"Inspect", "Extract", "Recognize", "Chunk", "Embed", "Index", "Publish", "Record failure"}
    for name, task in tasks.items():
        assert 0 < task["TimeoutSeconds"] <= 930, name
        retried = {error for retry in task["Retry"] for error in retry["ErrorEquals"]}
        assert retried <= RETRIED, f"{name} retries {retried - RETRIED}"
        assert "States.ALL" not in retried and "InfrastructureUnavailable" in retried, name
        backoff = task["Retry"][0]
        assert backoff["BackoffRate"] == 2 and backoff["JitterStrategy"] == "FULL" and backoff["MaxAttempts"] == 6
    caught = [*tasks.items(), ("Embed batches", machine["States"]["Embed batches"])]
    for name, state in caught:
        if name in ("Embed", "Record failure"):
            continue  # the Map catches for its tasks; the recorder's own failure goes straight to Fail
        (catch,) = state["Catch"]
        assert catch["ErrorEquals"] == ["States.ALL"] and catch["ResultPath"] == "$.error"
        marker = machine["States"][catch["Next"]]
        assert marker["Type"] == "Pass" and marker["ResultPath"] == "$.failedStep"
        assert marker["Next"] == "Record failure"
    assert machine["States"]["Record failure"]["Next"] == "Infrastructure failure"
    assert machine["States"]["Infrastructure failure"]["Type"] == "Fail"


def test_states_pass_references_never_content(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    for name, state in states(definition(template)):
        # Tasks hand the whole (small) state to the function and take its small answer: no document
        # content is selected into the state anywhere; the Map and the failure markers carry ids only.
        assert "ResultSelector" not in state, name
        if state["Type"] == "Map":
            assert set(state["ItemSelector"]) == {
                "tenantId.$",
                "fileId.$",
                "versionId.$",
                "attempt.$",
                "rescan.$",
                "reindex.$",
                "batch.$",
            }


def test_uploads_reach_on_object_created_through_eventbridge_with_dead_letters(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    handler = function_logical_id(template, "functions.on_object_created.handler.handler")
    (rule,) = resources(template, "AWS::Events::Rule").values()
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["source"] == ["aws.s3"] and pattern["detail-type"] == ["Object Created"]
    assert pattern["detail"]["object"]["key"] == [{"prefix": "tenants/"}]
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [handler, "Arn"]}
    assert "Arn" in target["DeadLetterConfig"] and target["RetryPolicy"]["MaximumRetryAttempts"] == 8
    # The function's own failures, after Lambda's retries, land in a queue too.
    template.has_resource_properties(
        "AWS::Lambda::EventInvokeConfig",
        {
            "FunctionName": {"Ref": handler},
            "MaximumRetryAttempts": 2,
            "DestinationConfig": {"OnFailure": {"Destination": Match.any_value()}},
        },
    )


def test_every_asynchronously_invoked_function_has_an_on_failure_destination(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    configured = {
        config["Properties"]["FunctionName"]["Ref"]
        for config in resources(template, "AWS::Lambda::EventInvokeConfig").values()
        if config["Properties"].get("DestinationConfig", {}).get("OnFailure")
    }
    for handler in ("functions.on_object_created.handler.handler", "functions.reconcile.handler.handler"):
        assert function_logical_id(template, handler) in configured


def test_reconcile_runs_on_the_environments_schedule_with_a_dead_letter_queue(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    reconcile = function_logical_id(template, "functions.reconcile.handler.handler")
    (schedule,) = [
        schedule
        for schedule in resources(template, "AWS::Scheduler::Schedule").values()
        if schedule["Properties"]["Target"]["Arn"] == {"Fn::GetAtt": [reconcile, "Arn"]}
    ]
    properties = schedule["Properties"]
    assert properties["ScheduleExpression"] == settings_for(env).reconcile_schedule
    assert properties["Target"]["Arn"] == {"Fn::GetAtt": [reconcile, "Arn"]}
    assert "Arn" in properties["Target"]["DeadLetterConfig"]


def test_dead_letter_queues_are_encrypted_and_refuse_plain_http(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    queues = resources(template, "AWS::SQS::Queue")
    assert len(queues) >= 4
    for queue in queues.values():
        assert queue["Properties"]["SqsManagedSseEnabled"] is True
        # A dead-letter queue keeps its messages as long as SQS can; a queue that has one is work (the webhook
        # wake-ups: tests/infra/test_events.py).
        if "RedrivePolicy" not in queue["Properties"]:
            assert queue["Properties"]["MessageRetentionPeriod"] == 14 * 24 * 3600
    secured = {
        queue["Ref"]
        for policy in resources(template, "AWS::SQS::QueuePolicy").values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Effect"] == "Deny" and statement.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        for queue in policy["Properties"]["Queues"]
    }
    assert secured == set(queues)


def holds_no_data(template: Template, statement: Mapping[str, Any]) -> bool:
    """The statement names only the console's bucket (its static files) and the CDK's bootstrap assets bucket:
    where the CDK's BucketDeployment handler, with the CDK's own wildcard grants, copies the console from."""
    (origin,) = only(template.find_resources("AWS::CloudFront::Distribution"))[1]["Properties"]["DistributionConfig"][
        "Origins"
    ]
    console_bucket = origin["DomainName"]["Fn::GetAtt"][0]
    names = (f"<{console_bucket}.Arn>", "arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-")
    return all(as_text(resource).startswith(names) for resource in as_list(statement["Resource"]))


def test_no_role_holds_a_wildcard_action_on_data(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    offending = []
    for logical_id, policy in resources(template, "AWS::IAM::Policy").items():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if holds_no_data(template, statement):
                continue
            offending += [
                (logical_id, action)
                for action in actions(statement)
                if action == "*" or (action.startswith(DATA_SERVICES) and "*" in action)
            ]
    assert offending == []


def test_each_step_touches_only_the_storage_it_needs(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized

    def s3_grants(handler: str) -> dict[str, set[str]]:
        """What a session of one tenant's may do in storage: the function's own role may do nothing there."""
        function_id = function_logical_id(template, handler)
        own = [a for s in role_statements(template, function_id) for a in actions(s) if a.startswith("s3:")]
        assert own == [], handler
        variables = template.to_json()["Resources"][function_id]["Properties"]["Environment"]["Variables"]
        if "QUIRE_TENANT_DATA_ROLE_ARN" not in variables:
            return {}
        grants: dict[str, set[str]] = {}
        for statement in statements_of_role(template, variables["QUIRE_TENANT_DATA_ROLE_ARN"]["Fn::GetAtt"][0]):
            for action in actions(statement):
                if not action.startswith("s3:"):
                    continue
                resources_ = (
                    statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
                )
                for resource in resources_:
                    joined = (
                        resource["Fn::Join"][1][-1] if isinstance(resource, dict) and "Fn::Join" in resource else ""
                    )
                    grants.setdefault(action, set()).add(joined.lstrip("/") or "bucket")
        return grants

    originals, derived = f"tenants/{TENANT}/*", f"derived/tenants/{TENANT}/*"
    # A re-index asks whether the stored document is still there: a read, and a 404 when it is not.
    assert s3_grants("functions.inspect.handler.handler") == {
        "s3:GetObject": {derived},
        "s3:GetObjectVersion": {derived},
        "s3:ListBucket": {"bucket"},
    }
    index = s3_grants("functions.index.handler.handler")
    assert index == {
        "s3:GetObject": {derived},
        "s3:GetObjectVersion": {derived},
        # Listing (under the tenant's derived/ only, by condition) makes a missing batch a 404, not a 403.
        "s3:ListBucket": {"bucket"},
        "s3:ListBucketVersions": {"bucket"},
    }
    extract = s3_grants("functions.extract.handler.handler")
    assert extract["s3:GetObject"] == {originals, derived} and extract["s3:PutObject"] == {derived}
    assert originals not in extract.get("s3:DeleteObject", set())
    embed = s3_grants("functions.embed.handler.handler")
    assert set(embed) == {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"}
    assert embed["s3:PutObject"] == {derived}
    recognize = s3_grants("functions.recognize.handler.handler")
    assert recognize["s3:PutObject"] == {derived, f"ocr-staging/tenants/{TENANT}/*"}


def test_only_the_recognize_steps_tenant_session_calls_transcribe_and_only_its_three_actions(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    recognize = function_logical_id(template, "functions.recognize.handler.handler")
    variables = template.to_json()["Resources"][recognize]["Properties"]["Environment"]["Variables"]
    tenant_role = variables["QUIRE_TENANT_DATA_ROLE_ARN"]["Fn::GetAtt"][0]
    granted: dict[str, set[str]] = {}
    for policy in resources(template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            for action in actions(statement):
                if action.startswith("transcribe:"):
                    for role in policy["Properties"]["Roles"]:
                        granted.setdefault(role["Ref"], set()).add(action)
    assert granted == {tenant_role: TRANSCRIBE_ACTIONS}
    statements = [s for s in statements_of_role(template, tenant_role) if set(actions(s)) & TRANSCRIBE_ACTIONS]
    (start,) = [s for s in statements if actions(s) == ["transcribe:StartTranscriptionJob"]]
    # StartTranscriptionJob has no resource type: its output's bucket and key are what can be conditioned.
    assert start["Resource"] == "*"
    assert set(start["Condition"]["StringEquals"]) == {"transcribe:OutputBucketName"}
    assert start["Condition"]["StringLike"] == {"transcribe:OutputKey": f"derived/tenants/{TENANT}/*"}
    (jobs,) = [s for s in statements if s is not start]
    assert sorted(actions(jobs)) == ["transcribe:DeleteTranscriptionJob", "transcribe:GetTranscriptionJob"]
    assert as_text(jobs["Resource"]).endswith(f":transcription-job/{TRANSCRIPTION_JOB_PREFIX}*")
    # The prefix the adapter names its jobs with.
    from shared.adapters.aws.transcribe import JOB_PREFIX

    assert TRANSCRIPTION_JOB_PREFIX == JOB_PREFIX


def test_only_the_embed_step_may_call_the_embedding_model_and_only_that_model(
    synthesized: tuple[str, Template],
) -> None:
    _, template = synthesized
    embed = role_statements(template, function_logical_id(template, "functions.embed.handler.handler"))
    (invoke,) = [s for s in embed if "bedrock:InvokeModel" in actions(s)]
    assert "amazon.titan-embed-text-v2:0" in str(invoke["Resource"])
    for step in ("inspect", "extract", "chunk", "index", "publish", "record_failure"):
        statements = role_statements(template, function_logical_id(template, f"functions.{step}.handler.handler"))
        assert not [s for s in statements if any(a.startswith("bedrock:") for a in actions(s))], step


def test_pipeline_logs_are_kept_as_long_as_the_environment_says(synthesized: tuple[str, Template]) -> None:
    env, template = synthesized
    days = settings_for(env).log_retention_days
    groups = resources(template, "AWS::Logs::LogGroup")
    assert groups and all(group["Properties"].get("RetentionInDays") == days for group in groups.values())
    expected = "Retain" if settings_for(env).retain_data else "Delete"
    assert all(group["DeletionPolicy"] == expected for group in groups.values())


def test_every_function_in_the_vpc_may_attach_its_network_interfaces(synthesized: tuple[str, Template]) -> None:
    _, template = synthesized
    roles = template.to_json()["Resources"]
    in_vpc = {
        logical_id: function
        for logical_id, function in resources(template, "AWS::Lambda::Function").items()
        if "VpcConfig" in function["Properties"]
    }
    assert len(in_vpc) >= 11
    for logical_id, function in in_vpc.items():
        role = roles[function["Properties"]["Role"]["Fn::GetAtt"][0]]
        managed = json.dumps(role["Properties"].get("ManagedPolicyArns", []))
        assert "service-role/AWSLambdaENIManagementAccess" in managed, logical_id
        # Logs only to its own group: no managed policy that writes to every log group of the account.
        assert "AWSLambdaVPCAccessExecutionRole" not in managed and "AWSLambdaBasicExecutionRole" not in managed


def test_images_are_described_only_where_the_environment_names_a_vision_model(
    synthesized: tuple[str, Template],
) -> None:
    env, template = synthesized
    model = settings_for(env).vision_model_id
    recognize_id = function_logical_id(template, "functions.recognize.handler.handler")
    variables = template.to_json()["Resources"][recognize_id]["Properties"]["Environment"]["Variables"]
    invokes = [s for s in role_statements(template, recognize_id) if "bedrock:InvokeModel" in actions(s)]
    if model is None:
        assert "QUIRE_VISION_MODEL_ID" not in variables and invokes == []
    else:
        assert variables["QUIRE_VISION_MODEL_ID"] == model
        (invoke,) = invokes
        assert f"foundation-model/{model}" in json.dumps(invoke["Resource"])


def test_functions_that_look_up_objects_learn_that_a_missing_one_is_missing(synthesized: tuple[str, Template]) -> None:
    """S3 answers HEAD of a missing key with 404 only to a caller with s3:ListBucket on the bucket, unconditioned
    (a HEAD carries no prefix a condition could match); to others, 403, which the adapters cannot tell from a
    refusal. Uploads (an event that outran its object) and reconciliation (a pending upload whose bytes never
    came) act on "missing"."""
    _, template = synthesized
    resources_ = template.to_json()["Resources"]
    for handler in ("functions.on_object_created.handler.handler", "functions.reconcile.handler.handler"):
        function_id = function_logical_id(template, handler)
        statements = role_statements(template, function_id)
        data_role = resources_[function_id]["Properties"]["Environment"]["Variables"].get("QUIRE_TENANT_DATA_ROLE_ARN")
        if data_role is not None:  # the look-ups are made with the tenant's session
            statements = statements_of_role(template, data_role["Fn::GetAtt"][0])
        unconditioned = [s for s in statements if "s3:ListBucket" in actions(s) and "Condition" not in s]
        assert len(unconditioned) == 1, handler
        assert json.dumps(unconditioned[0]["Resource"]).count("Arn") == 1, "the bucket itself, not its objects"
