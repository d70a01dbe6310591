"""Readiness as the API reports it: can this function reach what every request needs?"""

from enum import StrEnum

from pydantic import BaseModel

from shared.observability import logger
from shared.ports import HealthProbe


class Health(StrEnum):
    OK = "ok"
    DEGRADED = "degraded"


class HealthReport(BaseModel):
    status: Health
    database: str


def check_health(metadata: HealthProbe) -> HealthReport:
    try:
        metadata.ping()
    except Exception:
        # Logged with the trace; the response names the dependency, never the connection string.
        logger.exception("database ping failed")
        return HealthReport(status=Health.DEGRADED, database="unreachable")
    return HealthReport(status=Health.OK, database="ok")
