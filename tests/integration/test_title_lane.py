"""The title lane end to end through POST /v1/search on the local stack: a question naming a document by its
complete title (first heading, or filename without extension) brings it first as a direct subject; a title
inside a longer named one has no authority; unreadable titles never match; renames, moves and deletions keep
the titles right."""

import uuid
from typing import Any

from shared.adapters.postgres.database import Database
from shared.domain.auth import Role
from tests.integration.api_steps import indexed, search
from tests.integration.files_stack import Stack

PLAN = b"""# JLPT N2 Window Weekly Plan

Monday and Wednesday: two grammar units from the blue book, then twenty kanji.
Friday: one timed reading section, marked the same evening.
"""
EXAM = b"""# JLPT N2

Registration for the December sitting closes on 3 September; the fee is 7,500 yen.
"""
# Says the question's words far more often than the plan does: without the title lane it ranks first.
RIVAL = b"""What is on Friday in the JLPT N2 window? The weekly plan: on Friday, the N2 window weekly plan.
"""
QUESTION = "What is on Friday in the JLPT N2 Window Weekly Plan?"


def new_tenant() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


def hits(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return answer.get("hits", [])  # type: ignore[no-any-return]


def direct_files(answer: dict[str, Any]) -> set[str]:
    return {hit["citation"]["filename"] for hit in hits(answer) if hit["directSubject"]}


def titles_of(database: Database, tenant: str, file_id: str) -> set[tuple[str, str]]:
    with database.tenant_transaction(tenant) as conn:
        rows = conn.execute(
            "SELECT title_key, source FROM document_titles WHERE tenant_id = %s AND file_id = %s", (tenant, file_id)
        ).fetchall()
    return {(key, source) for key, source in rows}


def test_a_question_naming_a_documents_title_ranks_it_first_ahead_of_better_word_matches(stack: Stack) -> None:
    tenant = new_tenant()
    token = stack.token(tenant=tenant, collections=("docs",))
    indexed(stack, token, "week.md", PLAN)
    indexed(stack, token, "exam.md", EXAM)
    indexed(stack, token, "rival.md", RIVAL)

    answer = search(stack, token, QUESTION)

    assert answer["outcome"] == "found"
    first = hits(answer)[0]
    assert first["citation"]["filename"] == "week.md" and first["directSubject"] is True
    assert "timed reading section" in first["excerpt"]
    # Another document matched the words better (a higher fused score) and still comes after it.
    rival = [hit for hit in hits(answer) if hit["citation"]["filename"] == "rival.md"]
    assert rival and rival[0]["score"] > first["score"]
    # "JLPT N2" is named only inside the longer title: no authority.
    assert direct_files(answer) == {"week.md"}
    # Named on its own it is a title like any other; both named side by side are peers.
    assert direct_files(search(stack, token, "JLPT N2 registration")) == {"exam.md"}
    both = search(stack, token, "JLPT N2 Window Weekly Plan, and separately JLPT N2")
    assert direct_files(both) == {"week.md", "exam.md"}
    # A question naming no title changes nothing.
    assert direct_files(search(stack, token, "timed reading section")) == set()


def test_a_filename_without_its_extension_is_a_title(stack: Stack) -> None:
    tenant = new_tenant()
    token = stack.token(tenant=tenant, collections=("docs",))
    indexed(stack, token, "q3-budget.md", b"Travel is capped at forty thousand euros a quarter.\n")
    indexed(stack, token, "policy-notes.md", b"Travel policy: travel travel travel, book travel early.\n")

    for question in ("what does q3-budget say about travel", "Q3 Budget travel"):
        answer = search(stack, token, question)
        assert hits(answer)[0]["citation"]["filename"] == "q3-budget.md", question
        assert direct_files(answer) == {"q3-budget.md"}
        assert hits(answer)[0]["directSubject"] and not hits(answer)[1]["directSubject"]


def test_a_title_the_caller_cannot_read_never_matches_nor_shadows_a_readable_one(stack: Stack) -> None:
    tenant = new_tenant()
    writer = stack.token(tenant=tenant, collections=("docs", "board"))
    indexed(stack, writer, "falcon.md", b"# Project Falcon\n\nThe public overview of Falcon.\n")
    terms = b"# Project Falcon Final Terms\n\nThe price is 41 million.\n"
    indexed(stack, writer, "final.md", terms, collection="board")
    reader = stack.token(tenant=tenant, collections=("docs",))

    answer = search(stack, reader, "Project Falcon Final Terms")

    assert all(hit["citation"]["collectionId"] == "docs" for hit in hits(answer))
    assert "41 million" not in str(answer)
    # The longer title is not the reader's to see, so the shorter one keeps its authority.
    assert direct_files(answer) == {"falcon.md"}
    # The same answer as in a tenant where the board document does not exist: nothing counts it.
    alone = new_tenant()
    only = stack.token(tenant=alone, collections=("docs",))
    indexed(stack, only, "falcon.md", b"# Project Falcon\n\nThe public overview of Falcon.\n")
    elsewhere = search(stack, only, "Project Falcon Final Terms")
    assert [(h["directSubject"], h["excerpt"]) for h in hits(answer)] == [
        (h["directSubject"], h["excerpt"]) for h in hits(elsewhere)
    ]
    # A writer who reads both gets the longer title's authority.
    assert direct_files(search(stack, writer, "Project Falcon Final Terms")) == {"final.md"}
    # The search filters apply to titles as to both lanes.
    assert direct_files(search(stack, writer, "Project Falcon", filters={"filename": "final"})) == set()


def test_a_renamed_file_is_named_by_its_new_title_and_no_longer_by_the_old(
    stack: Stack, app_database: Database
) -> None:
    tenant = new_tenant()
    token = stack.token(tenant=tenant, collections=("docs",))
    body = b"Interviews run on Tuesdays with two panel members.\n"
    record = indexed(stack, token, "draft-notes.md", body)
    file_id = record["fileId"]
    assert titles_of(app_database, tenant, file_id) == {("draft notes", "filename")}

    status, ticket = stack.json(
        "POST",
        f"/v1/files/{file_id}/versions",
        token,
        {"filename": "hiring-plan.md", "mediaType": "text/markdown", "byteSize": len(body)},
    )
    assert status == 201, ticket
    assert stack.post_bytes(ticket, body, "text/markdown") in (200, 201, 204)
    stack.container.workflow.drain()  # type: ignore[attr-defined]

    assert titles_of(app_database, tenant, file_id) == {("hiring plan", "filename")}
    assert direct_files(search(stack, token, "hiring plan interviews")) == {"hiring-plan.md"}
    assert direct_files(search(stack, token, "draft notes interviews")) == set()


def test_a_moved_file_keeps_its_titles_where_it_went_and_a_deleted_file_has_none(
    stack: Stack, app_database: Database
) -> None:
    tenant = new_tenant()
    admin = stack.token(tenant=tenant, collections=("docs", "board"), role=Role.ADMIN)
    record = indexed(stack, admin, "week.md", PLAN)
    file_id = record["fileId"]
    heading = ("jlpt n2 window weekly plan", "heading")
    assert titles_of(app_database, tenant, file_id) == {heading, ("week", "filename")}

    status, moved = stack.json("POST", f"/v1/files/{file_id}/move", admin, {"collectionId": "board"})
    assert status == 200, moved
    assert titles_of(app_database, tenant, file_id) == {heading, ("week", "filename")}
    old_reader = stack.token(tenant=tenant, collections=("docs",), role=Role.READ)
    new_reader = stack.token(tenant=tenant, collections=("board",), role=Role.READ)
    assert direct_files(search(stack, old_reader, QUESTION)) == set()
    assert hits(search(stack, old_reader, QUESTION)) == []
    assert direct_files(search(stack, new_reader, QUESTION)) == {"week.md"}

    assert stack.json("DELETE", f"/v1/files/{file_id}", admin)[0] == 202
    assert titles_of(app_database, tenant, file_id) == set()
    assert hits(search(stack, new_reader, QUESTION)) == []
