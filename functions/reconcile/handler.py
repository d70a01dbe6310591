"""Scheduled reconciliation (EventBridge Scheduler). Wiring only: run the sweep, publish its counts as metrics."""

from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import container
from shared.config import load_settings
from shared.observability import logger, metrics, tracer

# The metrics infra/constructs/observability.py alarms on and graphs (a test checks the two lists agree):
# one per count of the report, stuckVersions included even when a report has none to give.
REPORTED_COUNTS = (
    "deletedVersions",
    "completedUploads",
    "pendingWithoutBytes",
    "processingRequested",
    "bytesWithoutRow",
    "rowsWithoutBytes",
    "objectsScanned",
    "stuckVersions",
    "staleWorkRemoved",
    "rendersResubmitted",
    "sessionsExpired",
    "uploadsAborted",
)
# QUIRE_ENVIRONMENT, set on every function by infra: the dimension the dashboard and alarms select on.
ENVIRONMENT = load_settings().environment


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    report = container().reconciler.run(datetime.now(UTC))
    counts = report.counts()
    # Added with the counts, not before the run: a run that raises publishes nothing, and its silence is what
    # the stuck-files alarm notices.
    metrics.add_dimension(name="environment", value=ENVIRONMENT)
    for name in REPORTED_COUNTS:
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=counts.get(name, 0))
    return report.as_dict()
