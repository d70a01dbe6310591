"""A file's metadata after upload (issue 33): one file's change, many files' changes in one transaction, and a
collection's schema. Writing needs the write role on the file's collection (404 where the caller cannot read it);
a schema needs the admin role. A change takes effect in search within the request that made it: filters read the
file's row, nothing is re-embedded or re-extracted."""

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from shared.domain.auth import Principal
from shared.domain.errors import InvalidRequest, NotFound
from shared.domain.files import FileRecord
from shared.domain.metadata import MAX_BULK_FILES, MetadataChange
from shared.domain.metadata_schema import MetadataSchema, SchemaError, parse_schema
from shared.ports import AuthorizationPolicy, FileCatalog, MetadataWriter


class FileMetadataService:
    def __init__(self, writer: MetadataWriter, catalog: FileCatalog, policy: AuthorizationPolicy) -> None:
        self._writer = writer
        self._catalog = catalog
        self._policy = policy

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
        self._writer.change_metadata(principal.tenant_id, [change], authorize=self._writable(principal))
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
        return self._writer.change_metadata(principal.tenant_id, changes, authorize=self._writable(principal))

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

    def _writable(self, principal: Principal) -> Any:
        def authorize(collection_id: str) -> None:
            self._policy.ensure_can_write(principal, collection_id)

        return authorize
