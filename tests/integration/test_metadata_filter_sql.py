"""The filter's SQL (shared/adapters/postgres/metadata_sql.py) keeps exactly the files the domain's `matches` keeps:
random metadata over a few hundred files, thousands of random filters, as the application role under row-level
security. The seed is printed on failure (QUIRE_FILTER_SEED reruns one)."""

import json
import os
import random
import uuid
from typing import Any

from shared.adapters.postgres.database import Database
from shared.adapters.postgres.metadata_sql import FileColumns, filter_condition
from shared.domain.metadata import MetadataType, indexed_metadata, typed_attributes
from shared.domain.metadata_filter import FilterError, matches, parse_filter
from tests.builders.metadata_cases import KEY_TYPES, random_built_ins, random_filter, random_metadata

FILES = 300
FILTERS = 2_500
TENANT = "tenant-filter-sql"
COLUMNS = FileColumns(
    built_in={
        "quire.collection": ("f.collection_id", MetadataType.STRING),
        "quire.filename": ("f.filename", MetadataType.STRING),
        "quire.uploadedAt": ("f.created_at", MetadataType.DATE),
        # Any integer column serves: the revision stands in for a page count here.
        "quire.pages": ("f.metadata_revision", MetadataType.NUMBER),
    }
)


def _insert_files(database: Database, rng: random.Random) -> dict[uuid.UUID, dict[str, Any]]:
    attributes: dict[uuid.UUID, dict[str, Any]] = {}
    with database.tenant_transaction(TENANT) as conn:
        conn.execute("DELETE FROM files WHERE tenant_id = %s", (TENANT,))
        for _ in range(FILES):
            file_id = uuid.UUID(int=rng.getrandbits(128))
            metadata, built_in = random_metadata(rng), random_built_ins(rng)
            conn.execute(
                "INSERT INTO files (tenant_id, file_id, collection_id, filename, created_by, created_at, metadata,"
                " metadata_typed, metadata_revision) VALUES (%s, %s, %s, %s, 'test', %s, %s, %s, %s)",
                (
                    TENANT,
                    file_id,
                    built_in["quire.collection"],
                    built_in["quire.filename"],
                    built_in["quire.uploadedAt"],
                    json.dumps(metadata),
                    json.dumps(indexed_metadata(metadata, KEY_TYPES)),
                    built_in["quire.pages"],
                ),
            )
            attributes[file_id] = {**typed_attributes(metadata, KEY_TYPES), **built_in}
    return attributes


def test_the_sql_of_a_filter_keeps_what_the_oracle_keeps(app_database: Database) -> None:
    seed = int(os.environ.get("QUIRE_FILTER_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    files = _insert_files(app_database, rng)
    compared = refused = 0
    kept_sizes = set()
    with app_database.tenant_transaction(TENANT) as conn:
        for _ in range(FILTERS):
            raw = random_filter(rng)
            try:
                parsed = parse_filter(raw)
            except FilterError:
                refused += 1
                continue
            params: dict[str, Any] = {"tenant": TENANT}
            condition = filter_condition(parsed, COLUMNS, params)
            rows = conn.execute(f"SELECT file_id FROM files f WHERE f.tenant_id = %(tenant)s AND {condition}", params)
            found = {row[0] for row in rows.fetchall()}
            expected = {file_id for file_id, attributes in files.items() if matches(parsed, attributes)}
            assert found == expected, f"seed {seed}: {json.dumps(raw)} kept {len(found)}, expected {len(expected)}"
            compared += 1
            kept_sizes.add(len(expected))
    # The cases exercised the language: most filters parse, and they kept many different shares of the files.
    assert compared > FILTERS * 0.7, (compared, refused)
    assert len(kept_sizes) > 50
