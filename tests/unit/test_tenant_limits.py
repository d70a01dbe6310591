"""Spend and capacity limits per tenant (issue 16) on the fakes: the sentences and when they reset, the request
rate's token bucket, an upload ticket refused before anything is recorded or signed, and the embed step over the
daily token limit leaving the version keyword-only without calling the model, the daily generation limit over
request usage, and a request's tokens shared out over its collections
(tests/integration/test_tenant_limits.py runs the API's 429s and the OCR limit on the real stack)."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.errors import LimitExceeded
from shared.domain.files import ProcessingState
from shared.domain.limits import LimitName, TenantLimits, daily_refusal, rescan_refusal
from shared.domain.usage import RequestKind, Usage, collection_shares, converse_usage
from shared.domain.workflow import ProcessVersion
from shared.services.authorization import ClaimsAuthorizationPolicy
from shared.services.files import FileService, UploadLimits, UploadTicket
from shared.services.limits import SpendLimits
from shared.services.request_rate import RequestRateLimiter
from tests.fakes import Fakes, principal

NOW = datetime(2026, 3, 4, 21, 30, tzinfo=UTC)
NOTES = b"# Checkout runbook\n\nBuyers could not pay: ERR-4021 at payment. Restart the payment gateway.\n"


def uploaded(fakes: Fakes) -> tuple[UploadTicket, ProcessVersion]:
    """A stored markdown version, and the request its Object Created event asked the workflow for."""
    ticket = fakes.files().start_upload(
        principal("acme", "docs"),
        collection_id="docs",
        filename="notes.md",
        media_type="text/markdown",
        byte_size=len(NOTES),
    )
    landed = fakes.content.post(ticket.upload, NOTES)
    fakes.completion().object_created(landed.key, landed.version_id, landed.byte_size)
    return ticket, fakes.workflow.started[-1]


def test_a_daily_refusal_names_the_limit_its_value_and_when_it_resets() -> None:
    refusal = daily_refusal(LimitName.OCR_PAGES, limit=1_000, spent=990, asked=20, now=NOW, then="scan it again")
    assert refusal is not None
    assert refusal.limit == "ocr_pages_per_day"
    assert refusal.retry_after_seconds == 2 * 3600 + 30 * 60  # until 00:00 UTC
    assert str(refusal) == (
        "the tenant's daily OCR limit of 1,000 pages is spent (990 read today, 20 more needed);"
        " scan it again after 00:00 UTC (in 2 h 30 min), when the ocr_pages_per_day limit resets"
    )
    assert daily_refusal(LimitName.OCR_PAGES, limit=1_000, spent=980, asked=20, now=NOW) is None
    assert daily_refusal(LimitName.OCR_PAGES, limit=None, spent=10**9, asked=1, now=NOW) is None
    alone = daily_refusal(LimitName.UPLOAD_BYTES, limit=100, spent=0, asked=101, now=NOW)
    assert alone is not None and "this needs 101 bytes, more than the tenant's daily upload limit of 100" in str(alone)


def test_the_rescan_after_the_limit_within_the_hour_is_refused_until_the_oldest_run_leaves_the_hour() -> None:
    runs = [NOW - timedelta(minutes=50), NOW - timedelta(minutes=20), NOW - timedelta(hours=2)]
    assert rescan_refusal(3, runs, now=NOW) is None  # the run two hours ago no longer counts
    refusal = rescan_refusal(2, runs, now=NOW)
    assert refusal is not None and refusal.limit == "rescans_per_file_per_hour"
    assert refusal.retry_after_seconds == 10 * 60
    assert "OCR'd 2 times in the last hour, and the limit is 2 per file per hour" in str(refusal)


def test_a_burst_past_the_rate_is_refused_with_when_a_token_is_back_and_another_tenant_is_unaffected() -> None:
    now = [100.0]
    limiter = RequestRateLimiter(2, burst=3, clock=lambda: now[0])
    answers = [limiter.refusal("noisy") for _ in range(5)]
    assert answers[:3] == [None, None, None]
    refused = [answer for answer in answers[3:] if answer is not None]
    assert len(refused) == 2 and {r.limit for r in refused} == {"requests_per_second"}
    assert refused[0].retry_after_seconds == 1 and "limit of 2 requests per second" in str(refused[0])
    assert [limiter.refusal("quiet") for _ in range(3)] == [None, None, None]
    now[0] += 0.5  # one token back at 2 per second
    assert limiter.refusal("noisy") is None
    assert limiter.refusal("noisy") is not None


def test_an_upload_ticket_past_the_daily_bytes_is_refused_before_a_row_or_a_signed_post() -> None:
    fakes = Fakes()
    spend = SpendLimits(fakes.ledger, fakes.metadata, TenantLimits(upload_bytes_per_day=1_000))
    files = FileService(
        fakes.metadata, fakes.content, ClaimsAuthorizationPolicy(), UploadLimits(max_bytes=fakes.max_bytes), spend=spend
    )
    caller = principal("acme", "docs")
    files.start_upload(caller, collection_id="docs", filename="a.txt", media_type="text/plain", byte_size=600)
    since = datetime.now(UTC) - timedelta(minutes=1)
    signed_before = len(fakes.content.keys())
    with pytest.raises(LimitExceeded) as refused:
        files.start_upload(caller, collection_id="docs", filename="b.txt", media_type="text/plain", byte_size=600)
    assert refused.value.limit == "upload_bytes_per_day"
    assert "daily upload limit of 1,000 bytes is spent (600 declared today, 600 more needed)" in str(refused.value)
    assert fakes.metadata.declared_bytes_since("acme", since) == 600  # no second row
    assert len(fakes.content.keys()) == signed_before
    # Another tenant's day is its own.
    other = principal("globex", "docs")
    files.start_upload(other, collection_id="docs", filename="c.txt", media_type="text/plain", byte_size=600)


def test_the_embed_step_past_the_daily_tokens_leaves_the_version_keyword_only_without_calling_the_model() -> None:
    fakes = Fakes()
    ticket, request = uploaded(fakes)
    # Earlier today the tenant embedded all its tokens.
    assert fakes.ledger.record(
        "acme",
        uuid.uuid4(),
        uuid.uuid4(),
        "docs",
        step="embed#00000",
        attempt=1,
        usage=Usage(provider="fake", operation="fake:embed", priced=False, input_tokens=100),
    )
    rows_before = dict(fakes.ledger.rows)
    spend = SpendLimits(fakes.ledger, fakes.metadata, TenantLimits(embedding_tokens_per_day=100))
    fakes.pipeline(spend=spend).run(request)
    found = fakes.metadata.find_version("acme", ticket.version_id)
    assert found is not None
    version = found[1]
    assert version.processing_state is ProcessingState.INDEXED
    assert version.chunk_count > 0 and version.embedded_chunk_count == 0
    assert version.embedding_gap is not None
    assert "daily embedding limit of 100 tokens is spent" in version.embedding_gap
    assert "re-index after 00:00 UTC" in version.embedding_gap
    assert fakes.embedder.calls == []
    assert fakes.ledger.rows == rows_before
    assert fakes.knowledge.of_version("acme", ticket.version_id) != []  # searchable by keyword


def test_generation_past_the_daily_tokens_is_refused_with_its_sentence_and_counts_input_and_output() -> None:
    fakes = Fakes()
    ledger = fakes.ledger
    spend = SpendLimits(ledger, fakes.metadata, TenantLimits(generation_tokens_per_day=1_000), clock=lambda: NOW)
    assert spend.generation_refusal("acme", tokens=1_000) is None  # nothing spent yet: exactly the limit fits
    ledger.record_request(
        "acme",
        kind=RequestKind.ANSWER,
        collections=frozenset({"docs"}),
        subject="ann",
        usage=converse_usage("model-a", input_tokens=900, output_tokens=80),
    )
    # Pipeline tokens are not generation tokens.
    assert ledger.record(
        "acme",
        uuid.uuid4(),
        uuid.uuid4(),
        "docs",
        step="embed#00000",
        attempt=1,
        usage=Usage(provider="fake", operation="fake:embed", priced=False, input_tokens=10_000),
    )
    assert spend.generation_refusal("acme", tokens=20) is None  # 980 + 20 = 1,000
    refusal = spend.generation_refusal("acme", tokens=21, then="ask again")
    assert refusal is not None and refusal.limit == "generation_tokens_per_day"
    assert refusal.retry_after_seconds == 2 * 3600 + 30 * 60
    assert str(refusal) == (
        "the tenant's daily generation limit of 1,000 tokens is spent (980 spent today, 21 more needed);"
        " ask again after 00:00 UTC (in 2 h 30 min), when the generation_tokens_per_day limit resets"
    )
    too_big = spend.generation_refusal("acme", tokens=1_001)
    assert too_big is not None and "this needs 1,001 tokens, more than the tenant's daily generation limit" in str(
        too_big
    )
    # Another tenant's day is its own, and no limit is no refusal.
    assert spend.generation_refusal("globex", tokens=1_000) is None
    unlimited = SpendLimits(ledger, fakes.metadata, TenantLimits(), clock=lambda: NOW)
    assert unlimited.generation_refusal("acme", tokens=10**9) is None


def test_a_request_s_tokens_are_shared_out_over_its_collections_and_add_up_to_the_call() -> None:
    usage = converse_usage("model-a", input_tokens=10, output_tokens=2)
    shares = collection_shares(["hr", "docs", "finance", "docs"], usage)
    assert [(s.collection_id, s.input_tokens, s.output_tokens) for s in shares] == [
        ("docs", 4, 1),
        ("finance", 3, 1),
        ("hr", 3, 0),
    ]
    assert collection_shares({"docs"}, usage)[0].input_tokens == 10
    with pytest.raises(ValueError, match="collection"):
        collection_shares([], usage)
    with pytest.raises(ValueError, match="tokens only"):
        collection_shares({"docs"}, Usage(provider="bedrock", operation="bedrock:Converse", priced=True, images=1))
