"""Which processing attempt holds a version: every step checks its claim before it writes anything, so a
superseded attempt (or a step delivered twice) changes nothing."""

from dataclasses import dataclass
from uuid import UUID

from shared.domain.files import FileRecord, FileVersionRecord, ProcessingState, VersionState
from shared.domain.workflow import ProcessVersion
from shared.ports import FileCatalog, ProcessingAttempts


@dataclass(frozen=True)
class Held:
    """The file and the version an attempt works on."""

    file: FileRecord
    version: FileVersionRecord

    def holds(self, request: ProcessVersion, state: ProcessingState) -> bool:
        """Whether the request's attempt holds the version in `state`."""
        return self.version.processing_state is state and self.version.processing_attempt == request.attempt


class AttemptClaims:
    def __init__(self, catalog: FileCatalog, attempts: ProcessingAttempts) -> None:
        self._catalog = catalog
        self._attempts = attempts

    def find(self, request: ProcessVersion) -> Held | None:
        """The file and version the request names (None when deleted, or when the ids do not belong together)."""
        found = self._catalog.find_version(request.tenant_id, UUID(request.version_id))
        if found is None or str(found[0].file_id) != request.file_id:
            return None
        return Held(*found)

    def stored(self, request: ProcessVersion) -> Held | None:
        """As `find`, when the version is stored (not deleted since the attempt was queued)."""
        found = self.find(request)
        return found if found is not None and found.version.state is VersionState.STORED else None

    def held(self, request: ProcessVersion, state: ProcessingState) -> Held | None:
        """As `find`, when this attempt holds the stored version in `state`."""
        found = self.stored(request)
        return found if found is not None and found.holds(request, state) else None

    def claim(self, request: ProcessVersion, *, to: ProcessingState, expected: list[ProcessingState]) -> bool:
        """Move the version to `to` for this attempt, when it is in one of the `expected` states."""
        return self._attempts.move_processing(
            request.tenant_id, UUID(request.version_id), attempt=request.attempt, to=to, expected=expected
        )

    def heartbeat(self, request: ProcessVersion, state: ProcessingState) -> bool:
        """Whether this attempt still holds the version in `state`, saying so on the row for the sweep."""
        return self._attempts.heartbeat(
            request.tenant_id, UUID(request.version_id), attempt=request.attempt, state=state
        )
