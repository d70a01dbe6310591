"""The event relay (EventBridge Scheduler, every minute): publishes the outbox to the environment's bus. Wiring only.

One invocation relays about once a second until less than STOP_MARGIN_SECONDS of it remain, so an event reaches the
bus within about a second of its commit without a LISTEN (which RDS Proxy would pin to one connection). The
function's timeout is STOP_MARGIN_SECONDS above the schedule's minute (infra/constructs/events.py; a test checks
the two agree): the last pass has that long to finish, and the next invocation starts as this one stops. Two that
overlap are safe: the outbox relays one tenant at a time (an advisory lock), in order.
"""

import time
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.bootstrap import container
from shared.config import load_settings
from shared.observability import logger, metrics, tracer
from shared.services.event_relay import EventRelay

# No pass starts with less than this left of the invocation (a pass over a backlog can take tens of seconds).
STOP_MARGIN_SECONDS = 60
# How often the outbox is asked while the invocation lasts.
PASS_INTERVAL_SECONDS = 1.0
ENVIRONMENT = load_settings().environment


def relay_until(
    relay: EventRelay,
    remaining_ms: Callable[[], int],
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, int]:
    """Relay, pass after pass about PASS_INTERVAL_SECONDS apart, until `remaining_ms()` is below the margin; the
    counts of every pass summed."""
    totals = {"published": 0, "deliveries": 0, "passes": 0}
    margin_ms = STOP_MARGIN_SECONDS * 1000
    while True:
        started = clock()
        report = relay.relay_all()
        totals["published"] += report.published
        totals["deliveries"] += report.deliveries
        totals["passes"] += 1
        pause = max(0.0, PASS_INTERVAL_SECONDS - (clock() - started))
        if remaining_ms() - pause * 1000 < margin_ms:
            return totals
        sleep(pause)


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    totals = relay_until(container().event_relay, context.get_remaining_time_in_millis)
    metrics.add_dimension(name="environment", value=ENVIRONMENT)
    metrics.add_metric(name="eventsPublished", unit=MetricUnit.Count, value=totals["published"])
    metrics.add_metric(name="webhookDeliveriesMade", unit=MetricUnit.Count, value=totals["deliveries"])
    return totals
