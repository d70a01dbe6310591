"""Request usage on the in-process stack: the model calls made inside a request (a tool's summary, an answer's
draft) are metered to the collections they were spent for, GET /v1/usage shows them with the kind as the step
and only the shares of the caller's readable collections, and the daily generation limit turns the summary tool
to its extractive outline, with the limit's sentence, without calling the model."""

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.domain.limits import day_start
from shared.domain.usage import RequestKind, converse_usage
from tests.builders.containers import replaced
from tests.fakes import FakeSummarizer, principal
from tests.integration.api_steps import REPORT, indexed
from tests.integration.files_stack import Stack
from tests.integration.limited_stack import limited


def new_tenant() -> str:
    return f"u{uuid.uuid4().hex[:10]}"


def usage_lines(stack: Stack, token: str) -> dict[str, dict[str, Any]]:
    status, usage = stack.json("GET", "/v1/usage", token)
    assert status == 200, usage
    return {line["step"]: line for line in usage["lines"]}


def summarize(stack: Stack, token: str, file_id: str) -> dict[str, Any]:
    status, answer = stack.json("POST", "/v1/tools/summarize_document", token, {"fileId": file_id})
    assert status == 200 and not answer["isError"], answer
    return answer["result"]  # type: ignore[no-any-return]


def test_a_summary_and_an_answer_are_in_the_usage_report_of_their_readable_collections_only(stack: Stack) -> None:
    tenant = new_tenant()
    token = stack.token(tenant, ("docs", "finance"))
    report = indexed(stack, token, "report.md", REPORT.encode())
    summarizer = FakeSummarizer(input_tokens=1_200, output_tokens=80)
    with replaced(stack.container, "summarizer", summarizer):
        summary = summarize(stack, token, report["fileId"])
    assert summary["method"] == "generated" and len(summarizer.calls) == 1

    # An answer drafted from evidence in both collections, as the answer service records it.
    stack.container.metering.record_request(
        principal(tenant, "docs", "finance"),
        kind=RequestKind.ANSWER,
        collections=frozenset({"docs", "finance"}),
        usage=converse_usage("model-a", input_tokens=3_001, output_tokens=401),
    )

    both = usage_lines(stack, token)
    assert {key: both["summary"][key] for key in ("calls", "inputTokens", "outputTokens", "model", "priced")} == {
        "calls": 1,
        "inputTokens": 1_200,
        "outputTokens": 80,
        "model": "fake-summarizer",
        "priced": True,
    }
    assert (both["answer"]["calls"], both["answer"]["inputTokens"], both["answer"]["outputTokens"]) == (1, 3_001, 401)
    assert both["answer"]["provider"] == "bedrock" and both["answer"]["operation"] == "bedrock:Converse"
    assert (both["answer"]["pages"], both["answer"]["images"]) == (0, 0)

    # A reader of finance alone sees finance's share of the answer and nothing of the summary of a docs file.
    finance = usage_lines(stack, stack.token(tenant, ("finance",)))
    assert "summary" not in finance
    assert (finance["answer"]["calls"], finance["answer"]["inputTokens"], finance["answer"]["outputTokens"]) == (
        1,
        1_500,
        200,
    )
    docs = usage_lines(stack, stack.token(tenant, ("docs",)))
    assert (docs["answer"]["inputTokens"], docs["answer"]["outputTokens"]) == (1_501, 201)
    assert docs["summary"]["inputTokens"] == 1_200
    # Another tenant's report has none of it.
    assert usage_lines(stack, stack.token(new_tenant(), ("docs", "finance"))) == {}
    spent = stack.container.usage_ledger.spent_since(tenant, day_start(datetime.now(UTC)))
    assert spent.generation_tokens == 1_200 + 80 + 3_001 + 401


def test_over_the_daily_generation_limit_the_summary_is_the_outline_with_the_sentence_and_no_model_call(
    stack: Stack,
) -> None:
    tenant = new_tenant()
    token = stack.token(tenant, ("docs",))
    report = indexed(stack, token, "report.md", REPORT.encode())
    stack.container.metering.record_request(
        principal(tenant, "docs"),
        kind=RequestKind.ANSWER,
        collections=frozenset({"docs"}),
        usage=converse_usage("model-a", input_tokens=900, output_tokens=100),
    )
    summarizer = FakeSummarizer(input_tokens=500, output_tokens=50)
    with limited(stack, limit_generation_tokens_per_day=1_000) as container:
        container.summarizer = summarizer
        summary = summarize(stack, token, report["fileId"])
        assert summary["method"] == "extractive" and summarizer.calls == []
        assert (
            "daily generation limit of 1,000 tokens is spent (1,000 spent today, 1 more needed)"
            in (summary["generator"])
        )
        assert "generation_tokens_per_day" in summary["generator"]
        assert summary["generator"].endswith("this is the extractive outline instead")
        # Nothing more was booked.
        assert "summary" not in usage_lines(stack, token)
    # Under a larger limit the same call is the model's, and its tokens are booked.
    with limited(stack, limit_generation_tokens_per_day=10_000) as container:
        container.summarizer = summarizer
        assert summarize(stack, token, report["fileId"])["method"] == "generated"
        assert usage_lines(stack, token)["summary"]["inputTokens"] == 500
    since = datetime.now(UTC) - timedelta(minutes=5)
    assert stack.container.usage_ledger.spent_since(tenant, since).generation_tokens == 1_000 + 550
