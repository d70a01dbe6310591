"""Document writing: edit proposals applied to artifacts by the deterministic writer, and replacements of
uploaded files that wait for an approval (docs/artifacts.md).

Originals never change, except by an approved replacement: a replacement is rendered in the file's own format
and staged; only an approval makes it the file's next version, through the normal upload path (its bytes land
under the version's key, the upload check verifies them, the pipeline extracts and indexes them). Unapproved,
rejected and expired replacements change nothing.
"""

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from shared.domain.artifacts import VersionConflict, build_content, content_hash
from shared.domain.auth import Principal
from shared.domain.document import Block
from shared.domain.errors import Conflict, InvalidRequest, NotFound, UnsupportedMediaType
from shared.domain.exports import ExportFormat, RenderRequest, content_id
from shared.domain.files import NewVersion, VersionState
from shared.domain.proposals import (
    AppliedProposal,
    Change,
    InsertBlocks,
    NewReplacement,
    Operation,
    ReplaceBlock,
    ReplacementRecord,
    ReplacementState,
    apply_operations,
)
from shared.domain.uploads import storage_key
from shared.ports import AuthorizationPolicy, FileCatalog, FileContentStore, ReplacementStore
from shared.services.artifacts import ArtifactService, ArtifactView, ContentInput
from shared.services.exports import ExportService
from shared.services.files import EXPORTS_ARE_RENDERINGS

# The formats Quire writes a replacement in, by the media type of the file it replaces.
REPLACEABLE: dict[str, ExportFormat] = {fmt.media_type: fmt for fmt in ExportFormat}
REPLACEMENT_LIFETIME = timedelta(days=7)
# A replacement is read (at most ArtifactLimits.parse_timeout_seconds) and rendered on the request path: both
# together inside the API function's 29 seconds, and inside its memory beside the request itself.
REQUEST_RENDER_SECONDS = 15.0
REQUEST_RENDER_MEMORY_BYTES = 768 * 1024 * 1024
_STAGED_KEY = re.compile(
    r"^derived/tenants/(?P<tenant>[A-Za-z0-9][A-Za-z0-9_.-]{0,63})/replacements/(?P<replacement>[0-9a-f-]{36})$"
)


def staged_replacement_key(tenant_id: str, replacement_id: UUID) -> str:
    """Where a replacement's bytes wait for the decision (under derived/: never an upload, never extracted)."""
    return f"derived/tenants/{tenant_id}/replacements/{replacement_id}"


@dataclass(frozen=True)
class ProposalOutcome:
    artifact_id: UUID
    base_version: int
    dry_run: bool
    changes: tuple[Change, ...]
    block_count: int
    proposal_id: UUID | None = None
    applied: ArtifactView | None = None  # the new version (None for a dry run)


class ReplacementAlreadyDecided(Conflict):
    def __init__(self, state: ReplacementState) -> None:
        super().__init__(f"this replacement is already {state.value}: nothing was changed")
        self.state = state


class DocumentWriter:
    def __init__(
        self,
        artifacts: ArtifactService,
        exports: ExportService,
        replacements: ReplacementStore,
        files: FileCatalog,
        *,
        content: FileContentStore,
        policy: AuthorizationPolicy,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        new_id: Callable[[], UUID] = uuid4,
    ) -> None:
        self._artifacts = artifacts
        self._exports = exports
        self._replacements = replacements
        self._files = files
        self._content = content
        self._policy = policy
        self._clock = clock
        self._new_id = new_id

    # --- proposals ----------------------------------------------------------------------------------------

    def propose(
        self,
        principal: Principal,
        artifact_id: UUID,
        *,
        base_version: int,
        operations: Sequence[Operation],
        dry_run: bool,
        producer: str,
    ) -> ProposalOutcome:
        """Validate `operations` against `base_version` (a stale base is a conflict), and unless `dry_run`,
        store the proposal and the version it makes in one transaction."""
        artifact = self._artifacts.writable(principal, artifact_id)
        if base_version != artifact.latest_version:
            raise VersionConflict(artifact.latest_version, base_version)
        base = self._artifacts.version_of(principal.tenant_id, artifact_id, base_version)
        if base is None:
            raise NotFound("not found")
        content = self._artifacts.read_content(base)
        resolved = self._with_blocks(operations)
        edited = apply_operations(content, resolved)
        new_content = build_content(edited.blocks, content.citations, self._artifacts.limits, ids=edited.ids)
        outcome = ProposalOutcome(
            artifact_id=artifact_id,
            base_version=base_version,
            dry_run=dry_run,
            changes=edited.changes,
            block_count=len(new_content.blocks),
        )
        if dry_run:
            return outcome
        proposal_id = self._new_id()
        stored_operations = tuple(
            operation.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
            for operation in resolved
        )
        digest = hashlib.sha256(json.dumps(stored_operations, sort_keys=True).encode()).hexdigest()
        provenance = base.provenance.model_copy(
            update={
                "producer": producer,
                "inputs": {"baseVersion": base_version, "operations": len(resolved), "operationsHash": digest},
                "proposal_id": proposal_id,
                "restored_from": None,
            }
        )
        applied = self._artifacts.write_version(
            principal,
            artifact,
            base_version,
            new_content,
            provenance,
            proposal=AppliedProposal(
                proposal_id=proposal_id,
                base_version=base_version,
                operations=stored_operations,
                created_by=principal.subject,
            ),
        )
        return replace(outcome, proposal_id=proposal_id, applied=applied)

    def _with_blocks(self, operations: Sequence[Operation]) -> list[Operation]:
        """Markdown in inserts and replaces, as blocks: all of a proposal's Markdown read in one bounded child."""
        markdown: list[str] = []
        for operation in operations:
            if isinstance(operation, InsertBlocks | ReplaceBlock) and operation.markdown is not None:
                if operation.blocks:
                    raise InvalidRequest(f"an {operation.op} gives blocks or markdown, not both")
                markdown.append(operation.markdown)
        parsed = iter(self._artifacts.parse_markdown_all(markdown) if markdown else [])
        return [
            operation.model_copy(update={"blocks": next(parsed), "markdown": None})
            if isinstance(operation, InsertBlocks | ReplaceBlock) and operation.markdown is not None
            else operation
            for operation in operations
        ]

    # --- replacements -------------------------------------------------------------------------------------

    def propose_replacement(
        self, principal: Principal, file_id: UUID, *, version_id: UUID | None, body: ContentInput
    ) -> ReplacementRecord:
        """The file's content as it should become, rendered in the file's own format and staged: nothing
        about the file changes until the replacement is approved."""
        record = self._files.get_file(principal.tenant_id, file_id)
        if record is None:
            raise NotFound("not found")
        self._policy.ensure_can_write(principal, record.collection_id)
        base = (
            record.current
            if version_id is None
            else next((v for v in record.versions if v.version_id == version_id), None)
        )
        if base is None or base.state is not VersionState.STORED:
            raise NotFound("not found", field="versionId")
        if base.version_id != record.current.version_id:
            raise Conflict("that is not the file's current version: a replacement replaces the current one")
        if base.export_id is not None:
            raise InvalidRequest(EXPORTS_ARE_RENDERINGS)
        if body.citations or body.sources:
            # Never dropped in silence: a replacement is the file's own bytes, which carry no citation notes.
            raise InvalidRequest(
                "a replacement is the file's new content and carries no citations or sources: send markdown or"
                " blocks alone (cite in an artifact instead)"
            )
        target = REPLACEABLE.get(base.media_type)
        if target is None:
            writable = ", ".join(sorted(REPLACEABLE))
            raise UnsupportedMediaType(
                f"Quire cannot write {base.media_type} files (it writes {writable}): upload the new version"
                f" yourself with POST /v1/files/{file_id}/versions"
            )
        blocks = self._blocks(body)
        replacement_id = self._new_id()
        # On the request path (a replacement is small, and decided by a person): bounded well inside the API's
        # own timeout; content that takes longer is refused with a sentence.
        rendered = self._exports.render_isolated(
            target,
            RenderRequest(title=base.filename, blocks=blocks, content_id=content_id(str(replacement_id))),
            timeout_seconds=REQUEST_RENDER_SECONDS,
            memory_limit_bytes=REQUEST_RENDER_MEMORY_BYTES,
        )
        staged = staged_replacement_key(principal.tenant_id, replacement_id)
        self._content.put(staged, rendered.content, content_type=target.media_type)
        return self._replacements.create(
            NewReplacement(
                tenant_id=principal.tenant_id,
                replacement_id=replacement_id,
                file_id=file_id,
                collection_id=record.collection_id,
                base_version_id=base.version_id,
                filename=base.filename,
                media_type=base.media_type,
                staged_key=staged,
                content_hash=content_hash(rendered.content),
                byte_size=len(rendered.content),
                created_by=principal.subject,
                expires_at=self._clock() + REPLACEMENT_LIFETIME,
            )
        )

    def accounts_for(self, key: str) -> bool | None:
        """Reconciliation: staged replacement bytes are accounted for by their replacement's row."""
        match = _STAGED_KEY.fullmatch(key)
        if match is None:
            return None
        try:
            replacement_id = UUID(match["replacement"])
        except ValueError:
            return False
        return self._replacements.get(match["tenant"], replacement_id) is not None

    def replacement(self, principal: Principal, replacement_id: UUID) -> ReplacementRecord:
        found = self._replacements.get(principal.tenant_id, replacement_id)
        if found is None:
            raise NotFound("not found")
        self._policy.ensure_can_read(principal, found.collection_id)
        if found.state is ReplacementState.PENDING and self._clock() >= found.expires_at:
            # Expiry is recorded when someone next looks at it: never shown as pending past its time.
            expired = self._replacements.decide(
                principal.tenant_id, replacement_id, state=ReplacementState.EXPIRED, decided_by=None
            )
            return expired or self._replacements.get(principal.tenant_id, replacement_id) or found
        return found

    def approve(self, principal: Principal, replacement_id: UUID) -> ReplacementRecord:
        """Record the approval, then make the staged bytes the file's next version through the upload path.
        Approving again after a crash finishes what the first approval started."""
        found = self._decidable_replacement(principal, replacement_id)
        if found.state is ReplacementState.PENDING:
            if self._clock() >= found.expires_at:
                self._replacements.decide(
                    principal.tenant_id, replacement_id, state=ReplacementState.EXPIRED, decided_by=None
                )
                raise ReplacementAlreadyDecided(ReplacementState.EXPIRED)
            record = self._files.get_file(principal.tenant_id, found.file_id)
            if record is None:
                raise NotFound("not found")
            if record.current.version_id != found.base_version_id:
                raise Conflict(
                    "the file has a newer version than the one this replacement was made against:"
                    " propose the replacement again from the current version"
                )
            decided = self._replacements.decide(
                principal.tenant_id, replacement_id, state=ReplacementState.APPROVED, decided_by=principal.subject
            )
            if decided is None:  # another decision was recorded first
                again = self._replacements.get(principal.tenant_id, replacement_id)
                raise ReplacementAlreadyDecided(again.state if again else ReplacementState.EXPIRED)
            found = decided
        if found.state is not ReplacementState.APPROVED:
            raise ReplacementAlreadyDecided(found.state)
        self._apply(principal, found)
        return found

    def reject(self, principal: Principal, replacement_id: UUID) -> ReplacementRecord:
        self._decidable_replacement(principal, replacement_id)
        decided = self._replacements.decide(
            principal.tenant_id, replacement_id, state=ReplacementState.REJECTED, decided_by=principal.subject
        )
        if decided is None:
            again = self._replacements.get(principal.tenant_id, replacement_id)
            raise ReplacementAlreadyDecided(again.state if again else ReplacementState.EXPIRED)
        return decided

    def _decidable_replacement(self, principal: Principal, replacement_id: UUID) -> ReplacementRecord:
        found = self._replacements.get(principal.tenant_id, replacement_id)
        if found is None:
            raise NotFound("not found")
        # A writer proposes a replacement; deciding it (the bytes others cite change) is the admin's.
        self._policy.ensure_can_administer(principal, found.collection_id)
        return found

    def _apply(self, principal: Principal, approved: ReplacementRecord) -> None:
        """The approved bytes as the file's next version: a pending row, then the bytes under its key (the
        upload check verifies and stores them, and processing starts as for any upload)."""
        version_id = approved.planned_version_id
        key = storage_key(principal.tenant_id, approved.file_id, version_id)
        existing = self._files.find_version(principal.tenant_id, version_id)
        if existing is None:
            self._files.create_version(
                NewVersion(
                    tenant_id=principal.tenant_id,
                    file_id=approved.file_id,
                    version_id=version_id,
                    collection_id=approved.collection_id,
                    filename=approved.filename,
                    media_type=approved.media_type,
                    declared_byte_size=approved.byte_size,
                    storage_key=key,
                    created_by=approved.created_by,
                ),
                new_file=False,
            )
        elif existing[1].state is VersionState.REJECTED:
            # The approved bytes never landed (a crash, then the sweep gave up on the version): say so.
            raise Conflict("the approved replacement could not be applied: propose it again")
        elif existing[1].state is not VersionState.PENDING:
            return  # already applied
        staged = self._content.get(approved.staged_key, max_bytes=approved.byte_size)
        if content_hash(staged) != approved.content_hash:
            raise RuntimeError("the staged replacement does not match its hash")
        self._content.put(key, staged, content_type=approved.media_type)

    def _blocks(self, body: ContentInput) -> tuple[Block, ...]:
        if (body.markdown is None) == (body.blocks is None):
            raise InvalidRequest("give the new content as exactly one of markdown or blocks")
        if body.markdown is not None:
            return self._artifacts.parse_markdown(body.markdown)
        built = build_content(body.blocks or (), (), self._artifacts.limits)
        return tuple(Block.model_validate(block.model_dump(exclude={"id"})) for block in built.blocks)
