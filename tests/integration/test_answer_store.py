"""The answer store (migrations/0020) on real PostgreSQL, as the application role: answers read back exactly as
saved, the cache finds the newest answer under a key and only the tenant's own, an answer and its feedback are
the asker's alone, nothing is rewritten, and the index version follows every change to what is searchable."""

import secrets
import uuid
from collections.abc import Callable
from datetime import timedelta

import psycopg
import pytest
from psycopg import errors, sql
from pydantic import ValidationError

from migrations.runner import apply_migrations
from shared.adapters.postgres.answers import PostgresAnswerStore
from shared.adapters.postgres.database import Database
from shared.adapters.postgres.file_metadata import PostgresFileMetadataStore
from shared.adapters.postgres.knowledge import PostgresKnowledgeIndex
from shared.bootstrap import Container
from shared.config import Settings
from shared.domain.answers import (
    AnswerClaim,
    AnswerFeedback,
    AnswerMethod,
    ClaimKind,
    FeedbackVerdict,
    StoredAnswer,
)
from shared.domain.errors import InvalidRequest
from shared.domain.knowledge import IndexingResult, IndexWrite
from shared.local.chunk_rows import new_indexing_version
from shared.local.supervisor import app_url_from_owner, set_app_role_password
from tests.builders.answers import CREATED, a_refusal, an_answer, stored
from tests.integration.conftest import MigratedDatabase, drop_role
from tests.integration.knowledge_rows import chunk_rows, index_texts

ANSWER_TABLES = ["answers", "answer_claims", "answer_citations", "answer_claim_citations", "answer_feedback"]


def tenants() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return f"a-{suffix}", f"b-{suffix}"


# --- round trip -----------------------------------------------------------------------------------------------


def test_an_answer_reads_back_exactly_as_it_was_saved(app_database: Database) -> None:
    tenant, _ = tenants()
    store = PostgresAnswerStore(app_database)
    answered, refused = stored(tenant, an_answer()), stored(tenant, a_refusal(), key="key-2")
    store.save(answered)
    store.save(refused)
    read = store.get(tenant, "ann", answered.answer.answer_id)
    assert read == answered
    assert store.get(tenant, "ann", refused.answer.answer_id) == refused
    # Groundedness is derived from the citations that name a claim, not stored.
    assert read is not None and [claim.supported for claim in read.answer.claims] == [True, True, False]


def test_supported_is_not_a_stored_column(owner_connection: psycopg.Connection) -> None:
    columns = {
        row[0]
        for row in owner_connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ANY(%s)", (ANSWER_TABLES,)
        )
    }
    assert "supported" not in columns and {"position", "kind", "quote"} <= columns


def test_an_answer_is_saved_whole_or_not_at_all(app_database: Database) -> None:
    tenant, _ = tenants()
    answer = an_answer()
    # A claim citing a number the answer does not have: the links fail, and with them everything before them.
    broken = answer.model_copy(update={"claims": (AnswerClaim(text="x", citations=(9,), kind=ClaimKind.DIRECT),)})
    store = PostgresAnswerStore(app_database)
    with pytest.raises(errors.ForeignKeyViolation):
        store.save(stored(tenant, broken))
    assert store.get(tenant, "ann", answer.answer_id) is None
    with app_database.tenant_transaction(tenant) as conn:
        counts = [conn.execute(f"SELECT count(*) FROM {table}").fetchone() for table in ANSWER_TABLES]
    assert counts == [(0,)] * len(ANSWER_TABLES)


def test_what_cannot_be_read_back_equal_is_refused_before_it_is_written(app_database: Database) -> None:
    tenant, _ = tenants()
    store = PostgresAnswerStore(app_database)
    answer = an_answer()
    for bad, message in (
        (answer.model_copy(update={"answer_id": answer.answer_id.upper()}), "canonical"),
        (answer.model_copy(update={"answer_id": "not-a-uuid"}), "canonical"),
        (answer.model_copy(update={"cached": True}), "already stored"),
        (answer.model_copy(update={"created_at": CREATED.replace(tzinfo=None)}), "time zone"),
    ):
        with pytest.raises(ValueError, match=message):
            store.save(stored(tenant, bad))


def test_every_field_is_bounded_by_the_schema(app_database: Database) -> None:
    tenant, _ = tenants()
    store = PostgresAnswerStore(app_database)
    answer = an_answer()
    too_long_claim = AnswerClaim(text="x" * 601, citations=(1,), kind=ClaimKind.DIRECT)
    for bad in (
        stored(tenant, answer, key="k" * 257),
        stored(tenant, answer, subject="s" * 256),
        stored(tenant, answer.model_copy(update={"claims": (too_long_claim,)})),
        stored(tenant, answer.model_copy(update={"prompt_version": "p" * 65})),
        # A refusal with a method, an answer without one: contradictions the domain rules out.
        stored(tenant, a_refusal().model_copy(update={"method": AnswerMethod.EXTRACTIVE})),
        stored(tenant, answer.model_copy(update={"method": None})),
        stored(
            tenant,
            answer.model_copy(update={"citations": (answer.citations[0].model_copy(update={"score": float("nan")}),)}),
        ),
    ):
        with pytest.raises(errors.CheckViolation):
            store.save(bad)


# --- the cache ------------------------------------------------------------------------------------------------


def test_the_cache_returns_the_newest_answer_under_the_key_not_before_the_given_time(app_database: Database) -> None:
    tenant, _ = tenants()
    store = PostgresAnswerStore(app_database)
    older = stored(tenant, an_answer(created_at=CREATED))
    newer = stored(tenant, an_answer(created_at=CREATED + timedelta(minutes=5)))
    other_key = stored(tenant, an_answer(created_at=CREATED + timedelta(minutes=9)), key="key-other")
    for answer in (newer, older, other_key):  # saved out of order: the newest by created_at wins
        store.save(answer)
    assert store.cached(tenant, "key-1", not_before=CREATED - timedelta(days=1)) == newer
    assert store.cached(tenant, "key-1", not_before=CREATED + timedelta(minutes=5)) == newer
    assert store.cached(tenant, "key-1", not_before=CREATED + timedelta(minutes=5, microseconds=1)) is None
    assert store.cached(tenant, "key-missing", not_before=CREATED - timedelta(days=1)) is None


def test_the_same_cache_key_never_returns_another_tenants_answer(app_database: Database) -> None:
    mine, theirs = tenants()
    store = PostgresAnswerStore(app_database)
    their_answer = stored(theirs, an_answer(created_at=CREATED + timedelta(hours=1)), key="shared-key")
    store.save(their_answer)
    assert store.cached(mine, "shared-key", not_before=CREATED - timedelta(days=1)) is None
    my_answer = stored(mine, an_answer(), key="shared-key")
    store.save(my_answer)
    # Theirs is newer, and still never mine.
    assert store.cached(mine, "shared-key", not_before=CREATED - timedelta(days=1)) == my_answer
    assert store.cached(theirs, "shared-key", not_before=CREATED - timedelta(days=1)) == their_answer


# --- the asker's own ------------------------------------------------------------------------------------------


def test_an_answer_is_found_only_by_the_subject_who_asked_it(app_database: Database) -> None:
    mine, theirs = tenants()
    store = PostgresAnswerStore(app_database)
    answer = stored(mine, an_answer(), subject="ann")
    store.save(answer)
    answer_id = answer.answer.answer_id
    assert store.get(mine, "ann", answer_id) == answer
    # Anyone else's, unknown, malformed, or asked from another tenant: the same not-found.
    assert store.get(mine, "bob", answer_id) is None
    assert store.get(mine, "ann", str(uuid.uuid4())) is None
    assert store.get(mine, "ann", "'; DROP TABLE answers; --") is None
    assert store.get(theirs, "ann", answer_id) is None


def test_feedback_is_recorded_only_on_the_callers_own_answer(app_database: Database) -> None:
    mine, theirs = tenants()
    store = PostgresAnswerStore(app_database)
    answer = stored(mine, an_answer(), subject="ann")
    store.save(answer)
    answer_id = answer.answer.answer_id
    wrong_citation = AnswerFeedback(verdict=FeedbackVerdict.WRONG_CITATION, note="Not what page 2 says.", citation=2)
    feedback_id = store.add_feedback(mine, "ann", answer_id, wrong_citation)
    assert feedback_id is not None and str(uuid.UUID(feedback_id)) == feedback_id
    assert store.add_feedback(mine, "ann", answer_id, AnswerFeedback(verdict=FeedbackVerdict.HELPFUL)) is not None
    for tenant, subject, target in (
        (mine, "bob", answer_id),
        (theirs, "ann", answer_id),
        (mine, "ann", str(uuid.uuid4())),
        (mine, "ann", "nope"),
    ):
        assert store.add_feedback(tenant, subject, target, wrong_citation) is None
    with app_database.tenant_transaction(mine) as conn:
        rows = conn.execute(
            "SELECT feedback_id::text, subject, verdict, note, citation FROM answer_feedback ORDER BY created_at"
        ).fetchall()
    assert rows[0] == (feedback_id, "ann", "wrong_citation", "Not what page 2 says.", 2)
    assert [row[2] for row in rows] == ["wrong_citation", "helpful"]


def test_feedback_naming_a_citation_the_answer_does_not_have_is_refused(app_database: Database) -> None:
    tenant, _ = tenants()
    store = PostgresAnswerStore(app_database)
    answer, refusal = stored(tenant, an_answer()), stored(tenant, a_refusal(), key="key-2")
    store.save(answer)
    store.save(refusal)
    with pytest.raises(InvalidRequest, match=r"citation 3 is not one of this answer's citations \(1, 2\)"):
        store.add_feedback(tenant, "ann", answer.answer.answer_id, AnswerFeedback(verdict="wrong_citation", citation=3))
    with pytest.raises(InvalidRequest, match="it has none"):
        store.add_feedback(tenant, "ann", refusal.answer.answer_id, AnswerFeedback(verdict="wrong_answer", citation=1))
    # Someone else's answer is not found before its citations are looked at: nothing about it is revealed.
    assert (
        store.add_feedback(tenant, "bob", answer.answer.answer_id, AnswerFeedback(verdict="wrong_citation", citation=3))
        is None
    )


def test_a_verdict_or_note_outside_the_contract_is_rejected_by_the_model_and_the_schema(app_database: Database) -> None:
    tenant, _ = tenants()
    store = PostgresAnswerStore(app_database)
    answer = stored(tenant, an_answer())
    store.save(answer)
    with pytest.raises(ValidationError):
        AnswerFeedback.model_validate({"verdict": "great"})
    with pytest.raises(ValidationError, match="2000"):
        AnswerFeedback(verdict=FeedbackVerdict.HELPFUL, note="x" * 2001)
    for verdict, note in (("great", None), ("helpful", "x" * 2001)):
        with pytest.raises(errors.CheckViolation), app_database.tenant_transaction(tenant) as conn:
            conn.execute(
                "INSERT INTO answer_feedback (tenant_id, answer_id, subject, verdict, note)"
                " VALUES (%s, %s, 'ann', %s, %s)",
                (tenant, answer.answer.answer_id, verdict, note),
            )


# --- row-level security, as the application role --------------------------------------------------------------


def test_the_tables_force_row_level_security_and_grant_the_application_only_insert_and_select(
    owner_connection: psycopg.Connection, migrated_database: MigratedDatabase
) -> None:
    tenant_match = "(tenant_id = current_tenant())"
    for table in [*ANSWER_TABLES, "collection_index_generations"]:
        forced = owner_connection.execute(
            "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = %s::regclass", (table,)
        ).fetchone()
        policies = owner_connection.execute(
            "SELECT policyname, cmd, qual, with_check FROM pg_policies WHERE tablename = %s", (table,)
        ).fetchall()
        granted = {
            privilege
            for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
            if owner_connection.execute(
                "SELECT has_table_privilege(%s, %s, %s)", (migrated_database.app_role, table, privilege)
            ).fetchone()
            == (True,)
        }
        assert forced == (True, True), table
        assert policies == [("tenant_isolation", "ALL", tenant_match, tenant_match)], table
        # The generations are written by a trigger as the owner: the application only reads them.
        assert granted == ({"SELECT"} if table == "collection_index_generations" else {"SELECT", "INSERT"}), table


def seed(database: Database, tenant: str) -> StoredAnswer:
    store = PostgresAnswerStore(database)
    answer = stored(tenant, an_answer())
    store.save(answer)
    assert store.add_feedback(tenant, "ann", answer.answer.answer_id, AnswerFeedback(verdict="helpful")) is not None
    index_texts(database, tenant, "docs", ["indexed words"])  # a generation row
    return answer


def test_another_tenant_sees_none_of_an_answer_and_can_attach_nothing_to_it(app_database: Database) -> None:
    mine, theirs = tenants()
    their_answer = seed(app_database, theirs)
    seed(app_database, mine)
    their_id = their_answer.answer.answer_id
    with app_database.tenant_transaction(mine) as conn:
        for table in [*ANSWER_TABLES, "collection_index_generations"]:
            by_tenant = conn.execute(f"SELECT count(*) FROM {table} WHERE tenant_id = %s", (theirs,)).fetchone()
            assert by_tenant == (0,), table
        for table in ANSWER_TABLES:
            by_id = conn.execute(f"SELECT count(*) FROM {table} WHERE answer_id = %s", (their_id,)).fetchone()
            assert by_id == (0,), table
    # Rows in their name are refused by the policy; rows in mine naming their answer have nothing to refer to.
    in_their_name = [
        ("answer_claims", "(tenant_id, answer_id, position, text, kind) VALUES (%s, %s, 5, 'planted', 'direct')"),
        ("answer_feedback", "(tenant_id, answer_id, subject, verdict) VALUES (%s, %s, 'eve', 'wrong_answer')"),
        (
            "answer_claim_citations",
            "(tenant_id, answer_id, position, rank, number) VALUES (%s, %s, 0, 5, 1)",
        ),
    ]
    for table, values in in_their_name:
        with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
            conn.execute(f"INSERT INTO {table} {values}", (theirs, their_id))
        with pytest.raises(errors.ForeignKeyViolation), app_database.tenant_transaction(mine) as conn:
            conn.execute(f"INSERT INTO {table} {values}", (mine, their_id))
    with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction(mine) as conn:
        conn.execute(
            "INSERT INTO answers (tenant_id, answer_id, subject, question, cache_key, outcome, method, needs_review,"
            " confidence, withheld, vector_available, prompt_version, index_version, collection_ids, created_at)"
            " VALUES (%s, gen_random_uuid(), 'eve', 'q', 'key-1', 'evidence_only', 'extractive', false, '{}', 0,"
            " true, 'p', 'v', '{}', now())",
            (theirs,),
        )
    # Without a tenant, nothing at all.
    with app_database.unscoped_transaction() as conn:
        for table in [*ANSWER_TABLES, "collection_index_generations"]:
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,), table
    # Theirs is intact.
    assert PostgresAnswerStore(app_database).get(theirs, "ann", their_id) == their_answer


@pytest.mark.parametrize("table", [*ANSWER_TABLES, "collection_index_generations"])
@pytest.mark.parametrize(
    "statement", ["UPDATE {table} SET tenant_id = tenant_id", "DELETE FROM {table}", "TRUNCATE {table}"]
)
def test_nobody_rewrites_or_removes_an_answer_its_feedback_or_a_generation_not_even_their_own(
    app_database: Database, table: str, statement: str
) -> None:
    mine, theirs = tenants()
    seed(app_database, theirs)
    own = seed(app_database, mine)
    for tenant in (mine, theirs):
        with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction(tenant) as conn:
            conn.execute(statement.format(table=table))
    assert PostgresAnswerStore(app_database).get(mine, "ann", own.answer.answer_id) == own


def test_the_application_cannot_write_a_generation_back(app_database: Database) -> None:
    tenant, _ = tenants()
    index_texts(app_database, tenant, "docs", ["indexed words"])
    for statement in (
        "INSERT INTO collection_index_generations VALUES (%(t)s, 'other', 1)",
        "UPDATE collection_index_generations SET generation = 1 WHERE tenant_id = %(t)s",
    ):
        with pytest.raises(errors.InsufficientPrivilege), app_database.tenant_transaction(tenant) as conn:
            conn.execute(statement, {"t": tenant})


# --- the index version ----------------------------------------------------------------------------------------


def reindex(database: Database, tenant: str, file_id: uuid.UUID, version_id: uuid.UUID, texts: list[str]) -> None:
    """Replace an indexed version's chunks (a re-index: attempt None), here with the same texts and count."""
    rows = chunk_rows(file_id, version_id, "c1", texts)
    written = PostgresKnowledgeIndex(database).replace_chunks(
        tenant,
        version_id,
        rows,
        IndexingResult(chunk_count=len(rows), embedded_count=0, embedding_model=None),
        attempt=None,
    )
    assert written is IndexWrite.STORED


def new_version_named(database: Database, tenant: str, file_id: uuid.UUID, filename: str, texts: list[str]) -> None:
    """A new version of the file under another name, indexed with the same texts (the same chunk count)."""
    _, version_id, attempt = new_indexing_version(database, tenant, "c1", filename, file_id)
    rows = chunk_rows(file_id, version_id, "c1", texts, filename=filename)
    written = PostgresKnowledgeIndex(database).replace_chunks(
        tenant,
        version_id,
        rows,
        IndexingResult(chunk_count=len(rows), embedded_count=0, embedding_model=None),
        attempt=attempt,
    )
    assert written is IndexWrite.STORED


def test_the_index_version_changes_with_every_change_to_what_is_searchable_and_only_then(
    app_database: Database,
) -> None:
    tenant, other_tenant = tenants()
    store = PostgresAnswerStore(app_database)
    metadata = PostgresFileMetadataStore(app_database)
    both = frozenset({"c1", "c2"})
    seen: list[str] = []

    def version_changed() -> str:
        """The version of c1: it must be new (never seen before) after each change."""
        current = store.index_version(tenant, frozenset({"c1"}))
        assert current not in seen
        seen.append(current)
        return current

    def unchanged(expected: str) -> None:
        assert store.index_version(tenant, frozenset({"c1"})) == expected

    texts = ["The okapi budget is 400 EUR.", "The okapi contact is in Bremen."]
    empty = version_changed()
    assert len(empty) == 16 and store.index_version(tenant, frozenset({"c1"})) == empty

    # Indexing a new version.
    file_id, version_id = index_texts(app_database, tenant, "c1", texts)
    indexed = version_changed()
    unchanged(indexed)

    # Nothing searchable: an upload not yet indexed; another collection; another tenant's c1.
    new_indexing_version(app_database, tenant, "c1", "pending.txt")
    index_texts(app_database, tenant, "c2", ["Unrelated words."])
    index_texts(app_database, other_tenant, "c1", ["Another tenant's words."])
    unchanged(indexed)

    # Re-indexing the version with the very same chunks (same count, same text).
    with_both = store.index_version(tenant, both)
    reindex(app_database, tenant, file_id, version_id, texts)
    version_changed()
    assert store.index_version(tenant, both) != with_both

    # Renaming: a new version under another name, same chunk count.
    new_version_named(app_database, tenant, file_id, "renamed.txt", texts)
    version_changed()

    # Moving the file out of c1 changes c1 and c2; moving it back changes c1 again.
    c2_before = store.index_version(tenant, frozenset({"c2"}))
    assert metadata.move_file(tenant, file_id, from_collection="c1", to_collection="c2")
    version_changed()
    assert store.index_version(tenant, frozenset({"c2"})) != c2_before
    assert metadata.move_file(tenant, file_id, from_collection="c2", to_collection="c1")
    version_changed()

    # A stored chunk rewritten in place (its location, its embedding): what a citation or the vector lane reads.
    with app_database.tenant_transaction(tenant) as conn:
        conn.execute(
            "UPDATE knowledge_chunks SET location = location WHERE tenant_id = %s AND file_id = %s", (tenant, file_id)
        )
    version_changed()

    # Deleting the file.
    assert metadata.begin_delete_file(tenant, file_id) >= 1
    deleted = version_changed()
    unchanged(deleted)


def test_the_index_version_depends_on_the_set_of_collections_not_their_order_or_duplicates(
    app_database: Database,
) -> None:
    tenant, _ = tenants()
    store = PostgresAnswerStore(app_database)
    index_texts(app_database, tenant, "c1", ["Some words."])
    one, both = store.index_version(tenant, frozenset({"c1"})), store.index_version(tenant, frozenset({"c1", "c2"}))
    assert one != both
    assert store.index_version(tenant, frozenset({"c2", "c1"})) == both
    # A collection nobody indexed yet is a state too: it differs from having no collections at all.
    assert store.index_version(tenant, frozenset()) != store.index_version(tenant, frozenset({"never-indexed"}))


def test_an_owner_that_is_no_superuser_still_bumps_the_generations(new_database: Callable[[], str]) -> None:
    # On Aurora the owner is no superuser: FORCE ROW LEVEL SECURITY binds the trigger (which runs as the owner)
    # too, and it must still count the current tenant's chunks, or indexing itself would fail there.
    superuser_url = new_database()
    owner, app_role = f"quire_owner_{secrets.token_hex(3)}", f"quire_app_owned_{secrets.token_hex(3)}"
    password = secrets.token_urlsafe(12)
    with psycopg.connect(superuser_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN CREATEROLE PASSWORD {}").format(sql.Identifier(owner), password))
        conn.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(sql.Identifier(conn.info.dbname), sql.Identifier(owner))
        )
        conn.execute(sql.SQL("ALTER SCHEMA public OWNER TO {}").format(sql.Identifier(owner)))
        conn.execute("CREATE EXTENSION vector")
    try:
        owner_url = app_url_from_owner(superuser_url, password, role=owner)
        apply_migrations(owner_url, embedding_dimension=384, app_role=app_role)
        set_app_role_password(owner_url, password, role=app_role)
        app = Database(app_url_from_owner(superuser_url, password, role=app_role), max_size=1)
        try:
            store = PostgresAnswerStore(app)
            before = store.index_version("owned-a", frozenset({"c1"}))
            file_id, _ = index_texts(app, "owned-a", "c1", ["Some words."])
            index_texts(app, "owned-b", "c1", ["Other words."])
            after = store.index_version("owned-a", frozenset({"c1"}))
            assert PostgresFileMetadataStore(app).begin_delete_file("owned-a", file_id) == 1
            assert len({before, after, store.index_version("owned-a", frozenset({"c1"}))}) == 3
            with app.tenant_transaction("owned-a") as conn:
                rows = conn.execute("SELECT tenant_id, collection_id, generation FROM collection_index_generations")
                assert rows.fetchall() == [("owned-a", "c1", 2)]
        finally:
            app.close()
    finally:
        drop_role(superuser_url, app_role)
        with psycopg.connect(superuser_url, autocommit=True) as conn:
            conn.execute(sql.SQL("REASSIGN OWNED BY {} TO CURRENT_USER").format(sql.Identifier(owner)))
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(owner)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(owner)))


# --- the composition root -------------------------------------------------------------------------------------


def test_the_composition_root_builds_the_store_on_the_applications_database(
    migrated_database: MigratedDatabase,
) -> None:
    tenant, _ = tenants()
    container = Container(Settings(runtime="local", database_url=migrated_database.app_url))
    try:
        store = container.answer_store
        assert isinstance(store, PostgresAnswerStore) and container.answer_store is store
        answer = stored(tenant, an_answer())
        store.save(answer)
        assert store.get(tenant, "ann", answer.answer.answer_id) == answer
    finally:
        container.database.close()
