"""0033's backfill: the text key (SHA-256 of the body) of every chunk stored before the column was, in batches that
each commit, so a million chunks are a thousand short transactions rather than one rewrite of the whole table.

Tenant by tenant, under each one's row-level security setting (it binds the owner too, as in 0023 and 0030); the
chunks still without a key are found through the (tenant_id, text_sha256) index. Resumable: the runner runs it again
until it returns True, and a chunk it has keyed is never read again; it stops between batches at the runner's
deadline (the deploy-time function's 15 minutes). Until it has reached a chunk, search still collapses
that chunk with its copies among the hits (the key is computed from the text there), but does not find it as a copy
outside them (`alsoIn` of a hit whose other copies were not candidates).
"""

import time
from typing import Any

import psycopg

BATCH = 1000

_KEYED = """
UPDATE knowledge_chunks
SET text_sha256 = encode(sha256(convert_to(substr(content, body_offset + 1), 'UTF8')), 'hex')
WHERE tenant_id = %(tenant)s AND chunk_id IN (
  SELECT chunk_id FROM knowledge_chunks WHERE tenant_id = %(tenant)s AND text_sha256 IS NULL LIMIT %(batch)s)
"""


def backfill(conn: psycopg.Connection[Any], deadline: float | None) -> bool:
    """True once every chunk is keyed; False when `deadline` (time.monotonic()) came first."""
    tenants = [row[0] for row in conn.execute("SELECT tenant_id FROM tenants ORDER BY tenant_id").fetchall()]
    for tenant in tenants:
        # Until a batch keys nothing: one comes short when the application deleted a chunk it was waiting to lock,
        # and chunks may remain.
        keyed = BATCH
        while keyed > 0:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            with conn.transaction():
                conn.execute("SELECT set_config('quire.tenant_id', %s, true)", (tenant,))
                keyed = conn.execute(_KEYED, {"tenant": tenant, "batch": BATCH}).rowcount
    return True
