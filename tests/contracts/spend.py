"""What the tenant limits read (shared/ports/): the usage ledger's spend since a moment (OCR pages, images,
embedding tokens of the embed and re-embed steps only, generation tokens of request usage), a file's OCR runs,
the declared bytes of the versions created since a moment, and request usage (answers, summaries) shared out
over its collections and totalled per readable collection. Each test works in tenants of its own, so the suite
can run against one shared database."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from shared.domain.limits import Spend
from shared.domain.usage import RequestKind, Usage, converse_usage, rerank_usage
from shared.ports import FileMetadataStore, UsageLedger
from tests.contracts.file_metadata import new_tenant, upload


def _usage(**amounts: int) -> Usage:
    return Usage(provider="engine", operation="engine:call", priced=True, **amounts)


def _ago(**delta: float) -> datetime:
    return datetime.now(UTC) - timedelta(**delta)


class SpendContract:
    @pytest.fixture
    def stores(self) -> tuple[FileMetadataStore, UsageLedger]:
        raise NotImplementedError("a contract's subclass provides the implementation")

    def test_spend_sums_pages_images_and_only_the_embedding_steps_tokens_of_one_tenant(
        self, stores: tuple[FileMetadataStore, UsageLedger]
    ) -> None:
        _, ledger = stores
        tenant, other = new_tenant(), new_tenant()
        file_id, version_id = uuid.uuid4(), uuid.uuid4()

        def record(tenant_id: str, step: str, usage: Usage, collection: str = "docs") -> None:
            assert ledger.record(tenant_id, file_id, version_id, collection, step=step, attempt=1, usage=usage)

        since = _ago(minutes=1)
        record(tenant, "ocr", _usage(pages=7))
        record(tenant, "vision", _usage(images=1, input_tokens=1_200, output_tokens=40))
        record(tenant, "embed#00000", _usage(input_tokens=300))
        record(tenant, "embed#00001", _usage(input_tokens=200), collection="elsewhere")
        record(tenant, "reembed:model-b", _usage(input_tokens=50))
        record(other, "ocr", _usage(pages=1_000))

        assert ledger.spent_since(tenant, since) == Spend(ocr_pages=7, vision_images=1, embedding_tokens=550)
        assert ledger.spent_since(tenant, _ago(minutes=-5)) == Spend()  # nothing recorded after a later moment
        assert ledger.spent_since(new_tenant(), since) == Spend()

    def test_a_files_ocr_runs_are_listed_oldest_first_and_no_other_files(
        self, stores: tuple[FileMetadataStore, UsageLedger]
    ) -> None:
        _, ledger = stores
        tenant = new_tenant()
        file_id, other_file = uuid.uuid4(), uuid.uuid4()
        since = _ago(minutes=1)
        for attempt in (1, 2):
            ledger.record(tenant, file_id, uuid.uuid4(), "docs", step="ocr", attempt=attempt, usage=_usage(pages=1))
        ledger.record(tenant, file_id, uuid.uuid4(), "docs", step="vision", attempt=1, usage=_usage(images=1))
        ledger.record(tenant, other_file, uuid.uuid4(), "docs", step="ocr", attempt=1, usage=_usage(pages=1))

        runs = ledger.ocr_runs_since(tenant, file_id, since)
        assert len(runs) == 2 and runs == sorted(runs) and all(run >= since for run in runs)
        assert ledger.ocr_runs_since(tenant, file_id, _ago(minutes=-5)) == []
        assert ledger.ocr_runs_since(new_tenant(), file_id, since) == []

    def test_declared_bytes_count_every_version_created_since_whatever_became_of_it(
        self, stores: tuple[FileMetadataStore, UsageLedger]
    ) -> None:
        metadata, _ = stores
        tenant, other = new_tenant(), new_tenant()
        since = _ago(minutes=1)
        first = upload(metadata, tenant)
        upload(metadata, tenant, file_id=first.file_id)  # a second version of the same file
        rejected = upload(metadata, tenant)
        assert metadata.mark_rejected(
            tenant, rejected.version_id, reason="larger than declared", byte_size=900, storage_version_id=None
        )
        upload(metadata, other)

        assert metadata.declared_bytes_since(tenant, since) == 300  # each declares 100 bytes
        assert metadata.declared_bytes_since(tenant, _ago(minutes=-5)) == 0
        assert metadata.declared_bytes_since(new_tenant(), since) == 0

    def test_request_usage_is_generation_spend_input_and_output_of_one_tenant_and_not_pipeline_tokens(
        self, stores: tuple[FileMetadataStore, UsageLedger]
    ) -> None:
        _, ledger = stores
        tenant, other = new_tenant(), new_tenant()
        since = _ago(minutes=1)
        ledger.record(
            tenant, uuid.uuid4(), uuid.uuid4(), "docs", step="embed#00000", attempt=1, usage=_usage(input_tokens=9)
        )
        ledger.record_request(
            tenant,
            kind=RequestKind.ANSWER,
            collections=frozenset({"docs", "finance"}),
            subject="ann",
            usage=converse_usage("model-a", input_tokens=1_001, output_tokens=99),
        )
        ledger.record_request(
            tenant,
            kind=RequestKind.SUMMARY,
            collections=frozenset({"docs"}),
            subject="bob",
            usage=converse_usage("model-a", input_tokens=300, output_tokens=20),
        )
        ledger.record_request(
            other,
            kind=RequestKind.ANSWER,
            collections=frozenset({"docs"}),
            subject="eve",
            usage=converse_usage("model-a", input_tokens=10**6, output_tokens=1),
        )

        assert ledger.spent_since(tenant, since) == Spend(embedding_tokens=9, generation_tokens=1_420)
        assert ledger.spent_since(tenant, _ago(minutes=-5)) == Spend()
        assert ledger.spent_since(other, since).generation_tokens == 1_000_001

    def test_rerank_calls_are_counted_as_queries_once_each_whatever_their_collections_and_spend_no_tokens(
        self, stores: tuple[FileMetadataStore, UsageLedger]
    ) -> None:
        _, ledger = stores
        tenant, other = new_tenant(), new_tenant()
        since = _ago(minutes=1)
        for collections in ({"docs", "finance", "hr"}, {"docs"}):
            ledger.record_request(
                tenant,
                kind=RequestKind.RERANK,
                collections=frozenset(collections),
                subject="ann",
                usage=rerank_usage("cohere.rerank-v3-5:0"),
            )
        ledger.record_request(
            tenant,
            kind=RequestKind.ANSWER,
            collections=frozenset({"docs"}),
            subject="ann",
            usage=converse_usage("model-a", input_tokens=10, output_tokens=2),
        )
        ledger.record_request(
            other, kind=RequestKind.RERANK, collections=frozenset({"docs"}), subject="eve", usage=rerank_usage("m")
        )

        assert ledger.spent_since(tenant, since) == Spend(generation_tokens=12, rerank_queries=2)
        assert ledger.spent_since(other, since) == Spend(rerank_queries=1)
        assert ledger.spent_since(tenant, _ago(minutes=-5)) == Spend()
        [rerank] = [
            line
            for line in ledger.totals(tenant, frozenset({"docs", "finance"}), since=since, until=_ago(minutes=-5))
            if line.step == "rerank"
        ]
        assert (rerank.calls, rerank.operation, rerank.priced, rerank.input_tokens) == (2, "bedrock:Rerank", True, 0)

    def test_request_usage_totals_show_only_the_shares_of_readable_collections_and_count_each_request_once(
        self, stores: tuple[FileMetadataStore, UsageLedger]
    ) -> None:
        _, ledger = stores
        tenant = new_tenant()
        since, until = _ago(minutes=1), _ago(minutes=-1)
        answer_id = uuid.uuid4()
        for _ in range(2):  # the same answer recorded twice books once
            ledger.record_request(
                tenant,
                kind=RequestKind.ANSWER,
                collections=frozenset({"docs", "finance", "hr"}),
                subject="ann",
                usage=converse_usage("model-a", input_tokens=1_001, output_tokens=100),
                usage_id=answer_id,
            )
        ledger.record_request(
            tenant,
            kind=RequestKind.ANSWER,
            collections=frozenset({"docs"}),
            subject="ann",
            usage=converse_usage("model-a", input_tokens=50, output_tokens=5),
        )
        ledger.record(tenant, uuid.uuid4(), uuid.uuid4(), "docs", step="ocr", attempt=1, usage=_usage(pages=2))

        def answer_line(collections: set[str]) -> tuple[int, int, int] | None:
            lines = ledger.totals(tenant, frozenset(collections), since=since, until=until)
            answers = [line for line in lines if line.step == "answer"]
            assert len(answers) <= 1
            if not answers:
                return None
            line = answers[0]
            assert (line.provider, line.operation, line.model, line.priced) == (
                "bedrock",
                "bedrock:Converse",
                "model-a",
                True,
            )
            assert line.pages == line.images == 0
            return line.calls, line.input_tokens, line.output_tokens

        # Shared out evenly, the remainder to the first collection in id order: 334 + 334 + 333 and 34 + 33 + 33.
        assert answer_line({"docs", "finance", "hr"}) == (2, 1_001 + 50, 100 + 5)
        assert answer_line({"finance", "hr"}) == (1, 667, 66)
        assert answer_line({"hr"}) == (1, 333, 33)
        assert answer_line({"docs"}) == (2, 334 + 50, 34 + 5)
        assert answer_line({"elsewhere"}) is None
        assert ledger.totals(tenant, frozenset(), since=since, until=until) == []
        # Pipeline lines are unchanged beside them.
        steps = {line.step: line.pages for line in ledger.totals(tenant, frozenset({"docs"}), since=since, until=until)}
        assert steps == {"ocr": 2, "answer": 0}
        assert ledger.totals(tenant, frozenset({"docs"}), since=until, until=_ago(minutes=-2)) == []
        assert ledger.spent_since(tenant, since).generation_tokens == 1_001 + 100 + 50 + 5

    def test_request_usage_needs_a_collection_and_is_tokens_only(
        self, stores: tuple[FileMetadataStore, UsageLedger]
    ) -> None:
        _, ledger = stores
        tenant = new_tenant()
        with pytest.raises(ValueError, match="collection"):
            ledger.record_request(
                tenant,
                kind=RequestKind.SUMMARY,
                collections=frozenset(),
                subject="ann",
                usage=converse_usage("model-a", input_tokens=1, output_tokens=1),
            )
        with pytest.raises(ValueError, match="tokens only"):
            ledger.record_request(
                tenant, kind=RequestKind.SUMMARY, collections=frozenset({"docs"}), subject="ann", usage=_usage(pages=1)
            )
        assert ledger.spent_since(tenant, _ago(minutes=1)) == Spend()
