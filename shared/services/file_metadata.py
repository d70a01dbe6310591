"""A file's metadata after upload (issue 33): one file's change, many files' changes in one transaction, and a
collection's schema. Writing needs the write role on the file's collection (404 where the caller cannot read it);
a schema needs the admin role. A change takes effect in search within the request that made it: filters read the
file's row, nothing is re-embedded or re-extracted; except that a change of the language the metadata declares
(`language`) re-indexes the file's current version through the workflow, after the change is committed."""

import logging
from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from shared.domain.auth import Principal
from shared.domain.errors import InvalidRequest, NotFound
from shared.domain.files import FileRecord, ProcessingState
from shared.domain.languages import METADATA_KEY, declared_language
from shared.domain.metadata import MAX_BULK_FILES, MetadataChange
from shared.domain.metadata_schema import MetadataSchema, SchemaError, parse_schema
from shared.ports import AuthorizationPolicy, FileCatalog, MetadataWriter

logger = logging.getLogger("quire")

# Changes of `language` in one bulk call: each may re-index its file within the request (a workflow start apiece),
# which must stay well inside API Gateway's 29 seconds.
MAX_LANGUAGE_CHANGES = 100

# Starts one version's re-index (Reindexer.start_version): tenant, file, version; False when it was already busy.
StartReindex = Callable[[str, UUID, UUID], bool]


class FileMetadataService:
    def __init__(
        self,
        writer: MetadataWriter,
        catalog: FileCatalog,
        policy: AuthorizationPolicy,
        *,
        reindex: StartReindex | None = None,
    ) -> None:
        self._writer = writer
        self._catalog = catalog
        self._policy = policy
        self._reindex = reindex

    def change(
        self,
        principal: Principal,
        file_id: UUID,
        *,
        set_values: dict[str, Any],
        remove: Sequence[str],
        expected_revision: int | None,
    ) -> FileRecord:
        change = MetadataChange(file_id, set_values, tuple(remove), expected_revision)
        before = self._languages_before(principal.tenant_id, [change])
        self._writer.change_metadata(principal.tenant_id, [change], authorize=self._writable(principal))
        self._reindex_changed_languages(principal.tenant_id, before)
        record = self._catalog.get_file(principal.tenant_id, file_id)
        if record is None:  # deleted the moment after
            raise NotFound("not found")
        return record

    def change_many(self, principal: Principal, changes: Sequence[MetadataChange]) -> dict[UUID, int]:
        """Every change or none; each file's new revision."""
        if len(changes) > MAX_BULK_FILES:
            raise InvalidRequest(f"files: {len(changes)} changes; at most {MAX_BULK_FILES} are allowed in one call")
        seen: dict[UUID, str] = {}
        for change in changes:
            if change.file_id in seen:
                raise InvalidRequest(f"{change.path}.fileId: names the same file as {seen[change.file_id]}")
            seen[change.file_id] = change.path
        languages = sum(1 for change in changes if _touches_language(change))
        if languages > MAX_LANGUAGE_CHANGES:
            raise InvalidRequest(
                f"files: {languages} changes set or remove `{METADATA_KEY}`; at most {MAX_LANGUAGE_CHANGES} may in one"
                " call, because each re-indexes its file: send them in several calls"
            )
        before = self._languages_before(principal.tenant_id, changes)
        revisions = self._writer.change_metadata(principal.tenant_id, changes, authorize=self._writable(principal))
        self._reindex_changed_languages(principal.tenant_id, before)
        return revisions

    def schema(self, principal: Principal, collection_id: str) -> MetadataSchema | None:
        self._policy.ensure_can_read(principal, collection_id)
        return self._writer.metadata_schema(principal.tenant_id, collection_id)

    def put_schema(self, principal: Principal, collection_id: str, raw: object) -> MetadataSchema:
        self._policy.ensure_can_administer(principal, collection_id)
        try:
            schema = parse_schema(raw)
        except SchemaError as error:
            raise InvalidRequest(str(error)) from error
        self._writer.put_metadata_schema(principal.tenant_id, collection_id, schema, updated_by=principal.subject)
        return schema

    def _languages_before(self, tenant_id: str, changes: Sequence[MetadataChange]) -> dict[UUID, str | None]:
        """The language each changed file's current version is read in now, for the changes that touch `language`."""
        if self._reindex is None:
            return {}
        touched = [change.file_id for change in changes if _touches_language(change)]
        before: dict[UUID, str | None] = {}
        for file_id in touched:
            record = self._catalog.get_file(tenant_id, file_id)
            if record is not None:
                before[file_id] = declared_language(record.current.declared_language, record.metadata)
        return before

    def _reindex_changed_languages(self, tenant_id: str, before: dict[UUID, str | None]) -> None:
        """Re-index each file whose current version is now declared another language (an indexed one: a version still
        being processed reads the metadata when it is chunked)."""
        assert self._reindex is not None or not before
        for file_id, language in before.items():
            try:
                started = self._reindex_if_changed(tenant_id, file_id, language)
            except Exception:
                # The change is committed, so the caller's answer is 200 whatever happens here (the workflow or the
                # embedder down, the day's embedding limit spent, a database error): the new language applies when
                # the version is next indexed.
                logger.warning(
                    "metadata language changed; the re-index could not start",
                    exc_info=True,
                    extra={"fileId": str(file_id)},
                )
                continue
            if started is not None:
                logger.info("metadata language changed", extra={"fileId": str(file_id), "reindexed": started})

    def _reindex_if_changed(self, tenant_id: str, file_id: UUID, language: str | None) -> bool | None:
        """None where nothing needs a re-index; else whether it started (False: processing began meanwhile)."""
        record = self._catalog.get_file(tenant_id, file_id)
        if record is None or self._reindex is None:
            return None
        current = record.current
        if declared_language(current.declared_language, record.metadata) == language:
            return None
        if current.processing_state is not ProcessingState.INDEXED:
            return None
        return self._reindex(tenant_id, file_id, current.version_id)

    def _writable(self, principal: Principal) -> Any:
        def authorize(collection_id: str) -> None:
            self._policy.ensure_can_write(principal, collection_id)

        return authorize


def _touches_language(change: MetadataChange) -> bool:
    return METADATA_KEY in change.set_values or METADATA_KEY in change.remove
