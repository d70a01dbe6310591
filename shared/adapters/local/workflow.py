"""The workflow port before the ingestion pipeline exists: it refuses, honestly.

Stored versions stay `not_started`; nothing pretends to have processed them. The in-process runner of
the pipeline's steps replaces this when extraction lands.
"""

from shared.domain.errors import CapabilityUnavailable
from shared.domain.workflow import ProcessVersion, StartOutcome


class PipelineNotBuilt:
    def start(self, request: ProcessVersion) -> StartOutcome:
        raise CapabilityUnavailable("workflow", "the ingestion pipeline is not in this build yet")
