"""The answer evaluation's report: a column per set with seed 003's figures beside, the floor sweep, and each
ask as JSON."""

import functools
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from shared.local.answer_evaluation.labels import Expectation
from shared.local.answer_evaluation.metrics import Observation, correctly_refused

# The figures the earlier system this answer pipeline's design comes from reported, printed beside ours.
SEED_003 = {
    "recall@1": 0.917,
    "recall@3": 1.0,
    "recall@5": 1.0,
    "citation_precision": 1.0,
    "refusal_correctness": 0.917,
}


def _figure(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _by_class(expect: str, report: dict[str, Any]) -> Any:
    return report["refusal_correctness_by_class"][expect]


def print_report(report: dict[str, dict[str, Any]]) -> None:
    """One column per set, seed 003's beside."""
    names = list(report)
    rows: list[tuple[str, str, Callable[[dict[str, Any]], Any]]] = [
        ("questions (ans/unans/unauth)", "", lambda m: "/".join(str(v) for v in m["questions"].values())),
        ("recall@1", "recall@1", lambda m: m["recall@1"]),
        ("recall@3", "recall@3", lambda m: m["recall@3"]),
        ("recall@5", "recall@5", lambda m: m["recall@5"]),
        ("gold passage recall", "", lambda m: m["gold_passage_recall"]),
        ("citation precision", "citation_precision", lambda m: m["citation_precision"]),
        ("citation resolvability", "", lambda m: m["citation_resolvability"]),
        ("citations checked", "", lambda m: m["citations_checked"]),
        ("verbatim share", "", lambda m: m["verbatim_share"]),
        ("refusal correctness", "refusal_correctness", lambda m: m["refusal_correctness"]),
        *((f"  {expect.value}", "", functools.partial(_by_class, expect.value)) for expect in Expectation),
        ("cross-tenant citations", "", lambda m: m["cross_tenant_citations"]),
        ("asked by the other tenant", "", lambda m: m["asked_by_other_tenant"]),
        ("latency p50 ms", "", lambda m: m["latency"]["p50_ms"]),
        ("latency p95 ms", "", lambda m: m["latency"]["p95_ms"]),
    ]
    print(f"{'metric':<30}" + "".join(f"{name:>14}" for name in names) + f"{'seed 003':>14}")
    for label, seed, value in rows:
        line = f"{label:<30}" + "".join(f"{_figure(value(report[name])):>14}" for name in names)
        print(line + f"{_figure(SEED_003.get(seed)) if seed else '':>14}")
    stages = sorted({stage for name in names for stage in report[name]["latency"]["stage_p50_ms"]})
    for stage in stages:
        print(
            f"{'  p50 ' + stage + ' ms':<30}"
            + "".join(f"{_figure(report[name]['latency']['stage_p50_ms'].get(stage)):>14}" for name in names)
        )


def print_sweep(rows: Sequence[dict[str, Any]]) -> None:
    """A calibration sweep's rows (the floor's or the margin's: the column after the set names it)."""
    if not rows:
        return
    parameter = next(key for key in rows[0] if key != "set")
    columns = ["set", parameter, "refusal_correctness", "answerable", "unanswerable", "recall@1", "recall@3"]
    columns += ["citation_precision", "claims_per_answer"]
    print("".join(f"{column:>19}" for column in columns))
    for row in rows:
        print("".join(f"{_figure(row[column]):>19}" for column in columns))


def observations_json(observations: Sequence[Observation]) -> list[dict[str, Any]]:
    """Each ask as JSON (for --json: the per-question detail behind the figures)."""
    return [
        {
            **{
                key: value
                for key, value in asdict(item).items()
                if key not in ("question", "citations", "stages", "claim_citations")
            },
            "id": item.question.id,
            "expect": item.question.expect.value,
            "correct": correctly_refused(item) if item.own else None,
            "cited": [citation.document for citation in item.citations],
        }
        for item in observations
    ]
