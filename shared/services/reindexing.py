"""Re-indexing after an embedding-model change, or after the embedder was down: the work list is derived
from what is stored (versions whose chunks another model embedded, or none did), one batch at a time.
An interruption loses at most one batch and no bookkeeping: there is no cursor to persist or lose."""

from pydantic import BaseModel, ConfigDict

from shared.domain.errors import CapabilityUnavailable
from shared.domain.files import FileRecord, FileVersionRecord
from shared.domain.knowledge import IndexingResult, IndexWrite
from shared.domain.usage import Usage
from shared.observability import logger
from shared.ports import FileCatalog, KnowledgeStore, UsageLedger
from shared.services.extracted_documents import ExtractedDocuments
from shared.services.indexing import Indexer, IndexOutcome, IndexTarget, UnindexableDocument
from shared.services.limits import SpendLimits
from shared.services.metering import Metering


class ReindexReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    embedding_model: str
    reindexed: int
    dropped: int  # sources that can no longer be reloaded: their chunks are removed, not retried forever
    skipped: int  # changed under the batch (deleted, re-processing): the next batch sees the truth
    remaining: int


class Reindexer:
    def __init__(
        self,
        catalog: FileCatalog,
        knowledge: KnowledgeStore,
        indexer: Indexer,
        documents: ExtractedDocuments,
        ledger: UsageLedger,
        *,
        spend: SpendLimits | None = None,
    ) -> None:
        self._spend = spend
        self._catalog = catalog
        self._knowledge = knowledge
        self._indexer = indexer
        self._documents = documents
        self._metering = Metering(ledger)

    def run_batch(self, tenant_id: str, collections: frozenset[str] | None, *, limit: int = 20) -> ReindexReport:
        status = self._indexer.capability()
        if not status.available:
            # Re-indexing without a model would only rewrite the same lexical-only chunks.
            raise CapabilityUnavailable("embedder", status.reason or "unavailable")
        if self._spend is not None:
            # A batch is refused once the day's tokens are spent (one batch may pass the limit by its own tokens).
            refusal = self._spend.embedding_refusal(tenant_id, tokens=1)
            if refusal is not None:
                raise refusal
        model = self._indexer.model_id
        reindexed = dropped = skipped = 0
        for file_id, version_id in self._knowledge.versions_to_reindex(tenant_id, collections, model, limit):
            found = self._catalog.find_version(tenant_id, version_id)
            if found is None or found[0].file_id != file_id:
                skipped += 1
                continue
            file, version = found
            if not self._documents.exists(version):
                self._knowledge.replace_chunks(
                    tenant_id,
                    version_id,
                    [],
                    IndexingResult(chunk_count=0, embedded_count=0, embedding_model=None),
                    attempt=None,
                )
                dropped += 1
                continue
            try:
                outcome = self._reindex(file, version)
            except UnindexableDocument:
                skipped += 1  # the same document cannot be cut now as before; it keeps its chunks
                continue
            if outcome.result.embedding_gap is not None:
                # The model failed at call time (throttled, access withdrawn): going on would only rewrite
                # more chunks without vectors. Stop, and say why.
                raise CapabilityUnavailable("embedder", outcome.result.embedding_gap)
            if outcome.written is IndexWrite.STORED:
                reindexed += 1
            else:
                skipped += 1
        remaining = len(self._knowledge.versions_to_reindex(tenant_id, collections, model, 10_000))
        logger.info("reindex batch", extra={"reindexed": reindexed, "dropped": dropped, "remaining": remaining})
        return ReindexReport(
            embedding_model=model, reindexed=reindexed, dropped=dropped, skipped=skipped, remaining=remaining
        )

    def _reindex(self, file: FileRecord, version: FileVersionRecord) -> IndexOutcome:
        """Index one extracted version from its stored document, outside any processing attempt."""
        # Its own step for the ledger, per model: re-embedding is paid again.
        step = f"reembed:{self._indexer.model_id}"

        def record(usage: Usage) -> None:
            self._metering.record(file, version, step=step, attempt=version.processing_attempt, usage=usage)

        document = self._documents.read(version)
        return self._indexer.index(IndexTarget.of(file, version), document, attempt=None, on_embedded=record)
