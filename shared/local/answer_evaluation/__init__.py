"""`quire eval --answers`: grounded answers measured against labelled questions (docs/answers.md, "Evaluation").

labels.py loads the question sets, metrics.py computes the figures (pure, over observations), runner.py asks
every question through the product's AnswerService and report.py prints the result. Today's names are
re-exported here.
"""

from shared.local.answer_evaluation.labels import (
    DEMO_COLLECTION,
    QUESTIONS_FILE,
    RESTRICTED,
    Expectation,
    Gold,
    LabelledQuestion,
    decoy_dataset,
    demo_questions,
    load_labels,
    scifact_questions,
)
from shared.local.answer_evaluation.metrics import (
    CitedChunk,
    Observation,
    at_floor,
    citation_precision,
    correctly_refused,
    cross_tenant_citations,
    gold_passage_recall,
    latency,
    metrics,
    percentile,
    recall_at,
    refusal_correctness,
    resolvability,
    verbatim_share,
)
from shared.local.answer_evaluation.report import SEED_003, observations_json, print_report, print_sweep
from shared.local.answer_evaluation.runner import (
    CALIBRATION_FLOORS,
    AnswerEvaluation,
    ScifactRun,
    Tenant,
    Uploader,
    demo_uploads,
    evaluate,
    evaluate_demo,
    floor_sweep,
)

__all__ = [
    "CALIBRATION_FLOORS",
    "DEMO_COLLECTION",
    "QUESTIONS_FILE",
    "RESTRICTED",
    "SEED_003",
    "AnswerEvaluation",
    "CitedChunk",
    "Expectation",
    "Gold",
    "LabelledQuestion",
    "Observation",
    "ScifactRun",
    "Tenant",
    "Uploader",
    "at_floor",
    "citation_precision",
    "correctly_refused",
    "cross_tenant_citations",
    "decoy_dataset",
    "demo_questions",
    "demo_uploads",
    "evaluate",
    "evaluate_demo",
    "floor_sweep",
    "gold_passage_recall",
    "latency",
    "load_labels",
    "metrics",
    "observations_json",
    "percentile",
    "print_report",
    "print_sweep",
    "recall_at",
    "refusal_correctness",
    "resolvability",
    "scifact_questions",
    "verbatim_share",
]
