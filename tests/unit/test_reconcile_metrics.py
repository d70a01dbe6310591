"""The reconcile handler publishes its report's counts as CloudWatch metrics (powertools EMF on stdout)."""

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from shared.bootstrap import overridden
from shared.local.http_api import LocalLambdaContext
from shared.observability import SERVICE
from shared.services.reconciliation import ReconcileReport


@dataclass
class StubReport:
    """A report with chosen counts: what the handler sees of a run."""

    values: dict[str, int]

    def counts(self) -> dict[str, int]:
        return dict(self.values)

    def as_dict(self) -> dict[str, Any]:
        return {"counts": self.values}


@dataclass
class FakeReconciler:
    report: Any = None
    failure: Exception | None = None
    runs: list[datetime] = field(default_factory=list)

    def run(self, now: datetime) -> Any:
        self.runs.append(now)
        if self.failure is not None:
            raise self.failure
        return self.report


@dataclass
class Wired:
    """The composition root as the handler uses it: only its reconciler."""

    reconciler: FakeReconciler


@pytest.fixture
def reconcile(monkeypatch: pytest.MonkeyPatch) -> Any:
    # Metrics are published unless powertools is told otherwise; make sure nothing in the environment does.
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    from functions.reconcile import handler

    monkeypatch.setattr(handler, "ENVIRONMENT", "prod")
    return handler


def published(out: str) -> list[dict[str, Any]]:
    """The EMF documents among the handler's stdout lines."""
    documents = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [document for document in documents if "_aws" in document]


def value(document: dict[str, Any], name: str) -> float:
    """One run's value of a metric (powertools writes each value as a list of the values added)."""
    (only,) = document[name]
    return float(only)


def metric_definitions(document: dict[str, Any]) -> dict[str, str]:
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    return {metric["Name"]: metric["Unit"] for metric in directive["Metrics"]}


def test_every_count_is_published_in_the_quire_namespace_per_environment(
    reconcile: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a run that found something of every kind
    values = {name: index + 1 for index, name in enumerate(reconcile.REPORTED_COUNTS)}
    # When the scheduled handler runs
    with overridden(Wired(FakeReconciler(report=StubReport(values)))):
        answer = reconcile.handler({}, LocalLambdaContext())
    # Then one EMF document carries each count, as a Count, in namespace Quire, by service and environment
    (document,) = published(capsys.readouterr().out)
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Quire"
    assert [sorted(dimensions) for dimensions in directive["Dimensions"]] == [["environment", "service"]]
    assert document["environment"] == "prod"
    assert document["service"] == SERVICE
    assert metric_definitions(document) == dict.fromkeys(reconcile.REPORTED_COUNTS, "Count")
    assert {name: value(document, name) for name in reconcile.REPORTED_COUNTS} == values
    # and the handler still answers with the report
    assert answer == {"counts": values}


def test_a_report_without_stuck_versions_publishes_zero_for_them(
    reconcile: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a report that has no stuckVersions count
    # When the handler runs
    with overridden(Wired(FakeReconciler(report=StubReport({"objectsScanned": 7})))):
        reconcile.handler({}, LocalLambdaContext())
    # Then stuckVersions is published as 0 (its alarm treats silence, not zero, as trouble) and so is every other
    (document,) = published(capsys.readouterr().out)
    assert value(document, "stuckVersions") == 0
    assert value(document, "objectsScanned") == 7
    assert set(metric_definitions(document)) == set(reconcile.REPORTED_COUNTS)


def test_every_count_a_real_report_gives_is_published(
    reconcile: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the report the real reconciler returns
    report = ReconcileReport(deleted_versions=2, objects_scanned=40)
    # When the handler runs
    with overridden(Wired(FakeReconciler(report=report))):
        reconcile.handler({}, LocalLambdaContext())
    # Then none of its counts goes unpublished, each with its value
    (document,) = published(capsys.readouterr().out)
    assert set(report.counts()) <= set(metric_definitions(document))
    assert {name: value(document, name) for name in report.counts()} == report.counts()


def test_a_run_that_fails_publishes_nothing_and_leaves_nothing_for_the_next(
    reconcile: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a reconciler whose run fails (the database is unreachable)
    # When the handler runs, then the failure reaches Lambda (an Errors datapoint) and no metric is published,
    # so the stuck-files alarm sees silence rather than a reassuring zero
    with (
        overridden(Wired(FakeReconciler(failure=ConnectionError("no database")))),
        pytest.warns(UserWarning, match="No application metrics to publish"),
        pytest.raises(ConnectionError, match="no database"),
    ):
        reconcile.handler({}, LocalLambdaContext())
    assert published(capsys.readouterr().out) == []
    # and the next successful run publishes one clean document
    with overridden(Wired(FakeReconciler(report=StubReport({"stuckVersions": 1})))):
        reconcile.handler({}, LocalLambdaContext())
    (document,) = published(capsys.readouterr().out)
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert len(directive["Dimensions"]) == 1
    assert value(document, "stuckVersions") == 1
