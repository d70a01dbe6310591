"""The request to process one stored file version, and what starting it did."""

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict


class ProcessVersion(BaseModel):
    """References only (ids), never content: Step Functions state is limited to 256 KB."""

    model_config = ConfigDict(frozen=True)

    tenant_id: str
    file_id: str
    version_id: str
    attempt: int = 1
    # A rescan: OCR reads every page of the version, in place of its text layer.
    rescan: bool = False
    # A re-index: the stored document is chunked and embedded again with the current model (no extraction,
    # no OCR), batch by batch through the same steps as any processing.
    reindex: bool = False

    @classmethod
    def from_step_input(cls, event: Mapping[str, Any]) -> "ProcessVersion":
        """A pipeline step's input, as Step Functions passes it (camelCase references)."""
        return cls(
            tenant_id=str(event["tenantId"]),
            file_id=str(event["fileId"]),
            version_id=str(event["versionId"]),
            attempt=int(event.get("attempt", 1)),
            rescan=bool(event.get("rescan", False)),
            reindex=bool(event.get("reindex", False)),
        )

    def step_input(self) -> dict[str, Any]:
        """The execution's input: what every step receives (camelCase references, never content)."""
        return {
            "tenantId": self.tenant_id,
            "fileId": self.file_id,
            "versionId": self.version_id,
            "attempt": self.attempt,
            "rescan": self.rescan,
            "reindex": self.reindex,
        }

    @property
    def execution_name(self) -> str:
        """Named after the version and the attempt: duplicate events start at most one execution, and a
        retry of a dead one gets a name of its own."""
        return f"v-{self.version_id}-{self.attempt}"


class StartOutcome(StrEnum):
    STARTED = "started"
    ALREADY_STARTED = "already_started"
