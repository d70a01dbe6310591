"""`quire eval`'s report: the held-out split, and the before/after and tune/held-out lines it prints."""

import json

import pytest

from shared.domain.search import Fusion, RetrievalTuning
from shared.local.evaluation import BEFORE, KEYWORD_BEFORE, ROWS, EvalReport, before, describe, held_out, print_report


def test_every_fifth_query_id_in_sorted_order_is_held_out() -> None:
    ids = [str(number) for number in range(1, 11)]  # sorted as strings: 1, 10, 2, 3, ...
    assert held_out(reversed(ids)) == {"4", "9"}
    assert held_out([]) == set()


def test_before_is_reciprocal_rank_k_10_whatever_is_configured() -> None:
    configured = RetrievalTuning(rrf_k=60, vector_weight=0.7)
    assert before(configured).fusion is Fusion.RRF
    assert before(configured).rrf_k == 10
    assert describe(configured) == "zscore per document, vector weight 0.7"
    assert describe(before(configured)) == "rrf, k 10"


def report() -> EvalReport:
    figures = {"ndcg@10": 0.7, "recall@10": 0.8, "recall@100": 0.9, "mrr@10": 0.6}
    return EvalReport(
        dataset="scifact",
        split="train",
        documents=3,
        chunks=5,
        queries=10,
        embedding_model="m",
        index_seconds=0.0,
        chunks_per_second=0.0,
        metrics={row: dict(figures) for row in ROWS},
        splits={
            BEFORE: {"tune": {"ndcg@10": 0.71}, "held-out": {"ndcg@10": 0.69}},
            "hybrid": {"tune": {"ndcg@10": 0.74}, "held-out": {"ndcg@10": 0.72}},
        },
        held_out_queries=2,
        fusion="zscore per document, vector weight 0.55",
        latency_ms=dict.fromkeys(ROWS, 1.0),
    )


def test_the_report_prints_before_and_after_and_the_held_out_split(capsys: pytest.CaptureFixture[str]) -> None:
    print_report(report())
    lines = capsys.readouterr().out.splitlines()
    rows: dict[str, str] = {}
    for line in lines:  # the first line of each row: the table's
        if line.split() and line.split()[0] in ROWS:
            rows.setdefault(line.split()[0], line)
    assert rows[BEFORE].endswith("before: unstemmed keyword lane, rrf, k 10")
    assert rows["hybrid"].endswith("after: stemmed keyword lane, zscore per document, vector weight 0.55")
    assert rows[KEYWORD_BEFORE].endswith("before: unstemmed (simple)")
    assert rows["keyword"].endswith("after: stemmed (english)")
    split = lines.index(next(line for line in lines if line.startswith("nDCG@10 on the tune queries (8)")))
    assert "held out (every 5th query id, 2; never tuned on)" in lines[split]
    assert lines[split + 1].split() == [BEFORE, "0.7100", "0.6900"]
    assert lines[split + 2].split() == ["hybrid", "0.7400", "0.7200"]


def test_the_json_report_carries_the_same_figures() -> None:
    as_json = json.loads(json.dumps(report().as_dict()))
    assert set(as_json["metrics"]) == set(ROWS)
    assert as_json["splits"]["hybrid"]["held-out"]["ndcg@10"] == 0.72
    assert as_json["held_out_queries"] == 2
    assert as_json["fusion"] == "zscore per document, vector weight 0.55"
