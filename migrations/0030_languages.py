"""0030's Python step: every stored chunk's language detected as indexing now detects it (each version's chunks
together, so a short chunk takes its document's language), its terms written again by its analyser from the folded
text, each version's languages recorded, the keyword statistics rebuilt from the new terms, and the title keys
with Chinese, Japanese or Korean in them written as their character pairs (as the title lane now compares them).
Tenant by tenant, under each one's row-level security setting (it binds the owner too, as in 0023)."""

from typing import Any

import psycopg

from shared.adapters.language_detection import Py3LangidDetector
from shared.domain.languages import analyser_of, chunk_languages, cjk_terms, declared_language, keyword_text
from shared.domain.languages import text_search_configuration as configuration_of
from shared.domain.titles import title_key

_BATCH = 1000

_CHUNKS = """
SELECT c.version_id, c.chunk_id, substr(c.content, c.body_offset + 1), c.content, v.declared_language, f.metadata
FROM knowledge_chunks AS c
JOIN file_versions AS v ON v.tenant_id = c.tenant_id AND v.version_id = c.version_id
JOIN files AS f ON f.tenant_id = c.tenant_id AND f.file_id = c.file_id
WHERE c.tenant_id = %s ORDER BY c.version_id, c.ordinal
"""
_WRITE = """
UPDATE knowledge_chunks AS c
SET language = r.language, analyser = r.analyser, search_vector = r.terms,
    lexical_length = (SELECT coalesce(sum(array_length(t.positions, 1)), 0) FROM unnest(r.terms) AS t)
FROM (SELECT u.chunk_id, u.language, u.analyser, to_tsvector(u.configuration::regconfig, u.text) AS terms
      FROM unnest(%(chunk_id)s::text[], %(language)s::text[], %(analyser)s::text[], %(configuration)s::text[],
                  %(text)s::text[]) AS u(chunk_id, language, analyser, configuration, text)) AS r
WHERE c.tenant_id = %(tenant)s AND c.chunk_id = r.chunk_id
"""
_VERSION_LANGUAGES = """
UPDATE file_versions AS v SET languages = coalesce((
  SELECT array_agg(language ORDER BY chunks DESC, language) FROM (
    SELECT language, count(*) AS chunks FROM knowledge_chunks AS c
    WHERE c.tenant_id = v.tenant_id AND c.version_id = v.version_id AND c.language IS NOT NULL
    GROUP BY language ORDER BY chunks DESC, language LIMIT 32) AS found), '{}')
WHERE v.tenant_id = %s AND v.chunk_count > 0
"""
_STATISTICS = (
    "INSERT INTO keyword_collections (tenant_id, collection_id, analyser, chunk_count, total_length)"
    " SELECT tenant_id, collection_id, analyser, count(*), sum(lexical_length) FROM knowledge_chunks"
    " WHERE tenant_id = %(tenant)s GROUP BY tenant_id, collection_id, analyser",
    "INSERT INTO keyword_terms (tenant_id, collection_id, analyser, term, chunk_count)"
    " SELECT c.tenant_id, c.collection_id, c.analyser, t.lexeme, count(*)"
    " FROM knowledge_chunks AS c, unnest(c.search_vector) AS t"
    " WHERE c.tenant_id = %(tenant)s GROUP BY c.tenant_id, c.collection_id, c.analyser, t.lexeme",
    "INSERT INTO keyword_postings (tenant_id, collection_id, analyser, term, chunk_id, frequency, chunk_length)"
    " SELECT c.tenant_id, c.collection_id, c.analyser, t.lexeme, c.chunk_id, cardinality(t.positions),"
    " c.lexical_length FROM knowledge_chunks AS c, unnest(c.search_vector) AS t WHERE c.tenant_id = %(tenant)s",
)


def migrate(conn: psycopg.Connection[Any]) -> None:
    detector = Py3LangidDetector()
    # The chunks' terms are written in place here, which the trigger forbids the application.
    conn.execute("ALTER TABLE knowledge_chunks DISABLE TRIGGER knowledge_chunks_before_write")
    for (tenant,) in conn.execute("SELECT tenant_id FROM tenants ORDER BY tenant_id").fetchall():
        conn.execute("SELECT set_config('quire.tenant_id', %s, true)", (tenant,))
        _reanalyse(conn, tenant, detector)
        conn.execute(_VERSION_LANGUAGES, (tenant,))
        for statement in _STATISTICS:
            conn.execute(statement, {"tenant": tenant})
        _rekey_titles(conn, tenant)
    conn.execute("ALTER TABLE knowledge_chunks ENABLE TRIGGER knowledge_chunks_before_write")
    conn.execute("CREATE INDEX knowledge_chunks_search ON knowledge_chunks USING gin (search_vector)")
    conn.execute("SELECT set_config('quire.tenant_id', '', true)")


def _reanalyse(conn: psycopg.Connection[Any], tenant: str, detector: Py3LangidDetector) -> None:
    pending: list[tuple[str, str | None, str]] = []  # (chunk id, language, content)
    version: list[tuple[str, str, str]] = []  # (chunk id, body, content) of the version being read
    version_id: object = None
    declared: str | None = None
    with conn.cursor(name=f"reanalyse_{tenant[:40]}") as reading:
        reading.itersize = _BATCH
        reading.execute(_CHUNKS, (tenant,))
        for found_version, chunk_id, body, content, declared_here, metadata in reading:
            if found_version != version_id:
                pending.extend(_detected(version, detector, declared))
                version, version_id = [], found_version
                declared = declared_language(declared_here, metadata)
            version.append((chunk_id, body, content))
            if len(pending) >= _BATCH:
                _write(conn, tenant, pending)
                pending = []
    pending.extend(_detected(version, detector, declared))
    if pending:
        _write(conn, tenant, pending)


def _detected(
    chunks: list[tuple[str, str, str]], detector: Py3LangidDetector, declared: str | None
) -> list[tuple[str, str | None, str]]:
    languages = chunk_languages([body for _, body, _ in chunks], detector.detect, declared=declared)
    return [(chunk_id, language, content) for (chunk_id, _, content), language in zip(chunks, languages, strict=True)]


def _write(conn: psycopg.Connection[Any], tenant: str, chunks: list[tuple[str, str | None, str]]) -> None:
    analysers = [analyser_of(language) for _, language, _ in chunks]
    conn.execute(
        _WRITE,
        {
            "tenant": tenant,
            "chunk_id": [chunk_id for chunk_id, _, _ in chunks],
            "language": [language for _, language, _ in chunks],
            "analyser": analysers,
            "configuration": [configuration_of(analyser) for analyser in analysers],
            "text": [keyword_text(content) for _, _, content in chunks],
        },
    )


def _rekey_titles(conn: psycopg.Connection[Any], tenant: str) -> None:
    # A stored key is its title's words joined by spaces, so the new key is the old key's: only CJK runs change.
    rows = conn.execute(
        "SELECT version_id, title_key, file_id, source FROM document_titles WHERE tenant_id = %s", (tenant,)
    )
    for version_id, key, file_id, source in rows.fetchall():
        if not cjk_terms(key):
            continue
        conn.execute(
            "DELETE FROM document_titles WHERE tenant_id = %s AND version_id = %s AND title_key = %s",
            (tenant, version_id, key),
        )
        new_key = title_key(key)
        if new_key is not None:  # a run of over 21 characters is more than a title's 20 words now
            conn.execute(
                "INSERT INTO document_titles (tenant_id, version_id, title_key, file_id, source)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (tenant, version_id, new_key, file_id, source),
            )
