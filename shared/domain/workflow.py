"""The request to process one stored file version, and what starting it did."""

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class ProcessVersion(BaseModel):
    """References only (ids), never content: Step Functions state is limited to 256 KB."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    file_id: str
    version_id: str
    attempt: int = 1

    @property
    def execution_name(self) -> str:
        """Named after the version and the attempt: duplicate events start at most one execution, and a
        retry of a dead one gets a name of its own."""
        return f"v-{self.version_id}-{self.attempt}"


class StartOutcome(StrEnum):
    STARTED = "started"
    ALREADY_STARTED = "already_started"
