"""The request to process one stored file version, and what starting it did."""

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class ProcessVersion(BaseModel):
    """References only (ids), never content: Step Functions state is limited to 256 KB."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    file_id: str
    version_id: str

    @property
    def execution_name(self) -> str:
        """Named after the version so duplicate and out-of-order events start at most one execution."""
        return f"v-{self.version_id}"


class StartOutcome(StrEnum):
    STARTED = "started"
    ALREADY_STARTED = "already_started"
