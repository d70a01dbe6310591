"""Re-indexing after an embedding-model change, or after the embedder was down: the work list is derived
from what is stored (versions whose chunks another model embedded, or none did), and each version on it is
re-indexed by the workflow, not inside the request that asked.

A call queues at most `limit` versions, each as a new processing attempt that starts from its stored document
(the pipeline's chunk, embed and index steps: the embed Map's batches are metered one by one, as for any
upload), and returns at once. A queued version leaves the work list, so the next call takes the next ones: a
version of thousands of chunks never holds up the rest. An interruption loses nothing: what is not re-indexed
is still on the list."""

from uuid import UUID

from pydantic import BaseModel, ConfigDict

from shared.domain.auth import Principal
from shared.domain.errors import CapabilityUnavailable, Forbidden
from shared.domain.files import ProcessingState
from shared.domain.knowledge import IndexingResult
from shared.domain.workflow import ProcessVersion
from shared.observability import logger
from shared.ports import (
    AuthorizationPolicy,
    EmbeddingProvider,
    FileCatalog,
    KnowledgeStore,
    ProcessingAttempts,
    Workflow,
)
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.limits import SpendLimits

# The caller's 503 when the workflow cannot be asked (an outage): the work is back on the list, nothing lost.
WORKFLOW_UNREACHABLE = "the workflow could not be asked to start the work: nothing was started, try again shortly"
# How many stale versions `remaining` counts up to (the list is derived, never stored).
REMAINING_COUNTED = 10_000


class ReindexReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    embedding_model: str
    queued: int  # re-indexes started: each runs through the workflow
    dropped: int  # sources that can no longer be reloaded: their chunks are removed, not retried forever
    skipped: int  # changed under the batch (deleted, already processing): the next batch sees the truth
    remaining: int  # stale versions not yet queued


class Reindexer:
    def __init__(
        self,
        catalog: FileCatalog,
        attempts: ProcessingAttempts,
        knowledge: KnowledgeStore,
        documents: ExtractedDocuments,
        *,
        workflow: Workflow,
        embedder: EmbeddingProvider,
        policy: AuthorizationPolicy,
        spend: SpendLimits | None = None,
        context_model: str | None = None,
    ) -> None:
        self._spend = spend
        # Where a model writes chunks' situating sentences: versions situated by another or none, or with a gap, are
        # stale too (the embed step finds what it already paid for in the cache).
        self._context_model = context_model
        self._policy = policy
        self._catalog = catalog
        self._attempts = attempts
        self._knowledge = knowledge
        self._documents = documents
        self._workflow = workflow
        self._embedder = embedder

    def start_for(self, principal: Principal, *, limit: int = 20) -> ReindexReport:
        """A caller's batch, over the collections it administers: re-indexing spends embeddings on every stale
        version of a collection, so it is the admin role's call (403 for a token that administers none)."""
        administered = self._policy.administered_collections(principal)
        if not administered:
            raise Forbidden("re-indexing needs the admin role in a collection; this token administers none")
        return self.start_batch(principal.tenant_id, administered, limit=limit)

    def start_batch(self, tenant_id: str, collections: frozenset[str] | None, *, limit: int = 20) -> ReindexReport:
        """Queue up to `limit` of the stale versions of `collections` (None: every collection of the tenant, for
        the local stack's own sweep after its model changed; a caller's request always names its collections)."""
        self._ensure_embeddable(tenant_id)
        model = self._embedder.model_id
        queued = dropped = skipped = 0
        for file_id, version_id in self._knowledge.versions_to_reindex(
            tenant_id, collections, model, limit, context_model=self._context_model
        ):
            found = self._catalog.find_version(tenant_id, version_id)
            if found is None or found[0].file_id != file_id:
                skipped += 1
                continue
            if not self._documents.exists(found[1]):
                self._knowledge.replace_chunks(
                    tenant_id,
                    version_id,
                    [],
                    IndexingResult(chunk_count=0, embedded_count=0, embedding_model=None),
                    attempt=None,
                )
                dropped += 1
                continue
            if self._start(tenant_id, file_id, version_id):
                queued += 1
            else:
                skipped += 1
        remaining = len(
            self._knowledge.versions_to_reindex(
                tenant_id, collections, model, REMAINING_COUNTED, context_model=self._context_model
            )
        )
        logger.info("reindex batch queued", extra={"queued": queued, "dropped": dropped, "remaining": remaining})
        return ReindexReport(
            embedding_model=model, queued=queued, dropped=dropped, skipped=skipped, remaining=remaining
        )

    def start_version(self, tenant_id: str, file_id: UUID, version_id: UUID) -> bool:
        """One indexed version through the workflow again (its document kept, its chunks cut and analysed anew): what a
        change of its file's metadata `language` needs. False when processing began meanwhile; refused as a batch is
        (CapabilityUnavailable, LimitExceeded) where its embed step would store gaps in place of the vectors it has."""
        self._ensure_embeddable(tenant_id)
        return self._start(tenant_id, file_id, version_id)

    def _ensure_embeddable(self, tenant_id: str) -> None:
        status = self._embedder.capability()
        if not status.available:
            # Re-indexing without a model would only rewrite the same chunks lexical-only, dropping their vectors.
            raise CapabilityUnavailable("embedder", status.reason or "unavailable")
        if self._spend is not None:
            # Refused once the day's tokens are spent (one batch may pass the limit by its own tokens): past it the
            # embed step stores gaps, so a version's vectors would be lost.
            refusal = self._spend.embedding_refusal(tenant_id, tokens=1)
            if refusal is not None:
                raise refusal

    def _start(self, tenant_id: str, file_id: UUID, version_id: UUID) -> bool:
        attempt = self._attempts.queue_reindex(tenant_id, version_id)
        if attempt is None:
            return False  # processing began meanwhile (an upload of a new version, a rescan)
        request = ProcessVersion(
            tenant_id=tenant_id, file_id=str(file_id), version_id=str(version_id), attempt=attempt, reindex=True
        )
        try:
            self._workflow.start(request)
        except Exception as error:
            logger.exception("could not start a re-index")
            # Back on the list as it was (indexed, with its chunks), for the next call.
            self._attempts.release_processing(tenant_id, version_id, attempt=attempt, back_to=ProcessingState.INDEXED)
            raise CapabilityUnavailable("workflow", WORKFLOW_UNREACHABLE) from error
        return True
