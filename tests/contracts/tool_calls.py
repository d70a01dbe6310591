"""What every ToolCallAudit keeps (shared/ports/): each call as it was recorded, under a call id of its own; a
tenant's calls newest first in keyset pages; a call shown only where every collection it acted in is visible
(one that acted in none shown to every reader of the tenant's audit); and never another tenant's.

Each test works in tenants of its own, so the suite can run against one shared database."""

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from shared.domain.audit import ToolCall, ToolCallRecord
from shared.ports import ToolCallAudit
from tests.contracts.file_metadata import new_tenant

AT = datetime(2026, 11, 29, 12, 0, 0, 123456, tzinfo=UTC)
EVERYWHERE = frozenset({"docs", "hr", "legal"})


def tool_call(
    tenant: str,
    *,
    collections: tuple[str, ...] = ("docs",),
    at: datetime = AT,
    tool: str = "read_file",
    outcome: str = "ok",
    subject: str = "agent-user",
) -> ToolCall:
    return ToolCall(
        tenant_id=tenant,
        subject=subject,
        tool=tool,
        surface="mcp",
        argument_ids={"fileId": "0b8e1c52-7d3f-4f5e-9c1a-3d2b1a0f9e8d"},
        collection_ids=collections,
        outcome=outcome,
        duration_ms=42,
        called_at=at,
    )


def everything(audit: ToolCallAudit, tenant: str, visible: frozenset[str] = EVERYWHERE) -> list[ToolCallRecord]:
    rows, more = audit.recent(tenant, visible_collections=visible, limit=100, before=None)
    assert not more
    return rows


class ToolCallAuditContract:
    @pytest.fixture
    def audit(self) -> ToolCallAudit:
        raise NotImplementedError("a contract's subclass provides the implementation")

    def test_a_recorded_call_reads_back_as_it_was_recorded_with_a_call_id_of_its_own(
        self, audit: ToolCallAudit
    ) -> None:
        tenant = new_tenant()
        call = ToolCall(
            tenant_id=tenant,
            subject="8e3f1c2a-1111-4a4a-9b9b-0123456789ab",
            tool="compose_pdf",
            surface="http",
            argument_ids={"fileIds[0]": "a", "fileIds[1]": "b", "collectionId": "legal"},
            collection_ids=("legal", "docs"),
            outcome="limit_exceeded",
            duration_ms=1234,
            called_at=AT,
        )
        audit.record(call)
        audit.record(call)
        first, second = everything(audit, tenant)
        assert first.call_id != second.call_id
        for row in (first, second):
            assert row.model_dump(exclude={"call_id"}) == call.model_dump()
            assert row.called_at == AT and row.called_at.utcoffset() == timedelta(0)

    def test_calls_come_newest_first_in_keyset_pages_that_neither_skip_nor_repeat(self, audit: ToolCallAudit) -> None:
        tenant = new_tenant()
        # Two calls share each instant: the call id orders them, and a page may end between them.
        for minute in range(3):
            for _ in range(2):
                audit.record(tool_call(tenant, at=AT + timedelta(minutes=minute)))
        seen: list[ToolCallRecord] = []
        before = None
        while True:
            page, more = audit.recent(tenant, visible_collections=EVERYWHERE, limit=4, before=before)
            seen += page
            if not more:
                break
            before = (page[-1].called_at, page[-1].call_id)
        assert len(seen) == 6 and len({row.call_id for row in seen}) == 6
        assert [(row.called_at, row.call_id) for row in seen] == sorted(
            ((row.called_at, row.call_id) for row in seen), reverse=True
        )
        assert seen == everything(audit, tenant)

    def test_a_page_says_whether_more_follow(self, audit: ToolCallAudit) -> None:
        tenant = new_tenant()
        for second in range(3):
            audit.record(tool_call(tenant, at=AT + timedelta(seconds=second)))
        page, more = audit.recent(tenant, visible_collections=EVERYWHERE, limit=3, before=None)
        assert (len(page), more) == (3, False)
        page, more = audit.recent(tenant, visible_collections=EVERYWHERE, limit=2, before=None)
        assert (len(page), more) == (2, True)
        # Nothing is older than the oldest call's instant with the lowest call id.
        assert audit.recent(tenant, visible_collections=EVERYWHERE, limit=2, before=(AT, UUID(int=0))) == ([], False)

    def test_a_call_is_shown_only_where_every_collection_it_acted_in_is_visible(self, audit: ToolCallAudit) -> None:
        tenant = new_tenant()
        audit.record(tool_call(tenant, collections=("docs",), tool="in_docs"))
        audit.record(tool_call(tenant, collections=("docs", "hr"), tool="in_docs_and_hr"))
        audit.record(tool_call(tenant, collections=("hr",), tool="in_hr"))
        audit.record(tool_call(tenant, collections=(), tool="refused_unknown", outcome="not_found"))

        def tools(visible: set[str]) -> set[str]:
            return {row.tool for row in everything(audit, tenant, frozenset(visible))}

        # A call that acted in no collection reveals none's content: every reader of the audit sees it.
        assert tools({"docs"}) == {"in_docs", "refused_unknown"}
        assert tools({"hr"}) == {"in_hr", "refused_unknown"}
        assert tools({"docs", "hr"}) == {"in_docs", "in_docs_and_hr", "in_hr", "refused_unknown"}
        assert tools({"legal"}) == {"refused_unknown"}
        assert tools(set()) == {"refused_unknown"}

    def test_one_tenant_never_reads_anothers_calls_whatever_collections_it_names(self, audit: ToolCallAudit) -> None:
        mine, theirs = new_tenant(), new_tenant()
        audit.record(tool_call(theirs, collections=("docs",), tool="theirs"))
        audit.record(tool_call(theirs, collections=(), tool="theirs_refused", outcome="not_found"))
        audit.record(tool_call(mine, collections=("docs",), tool="mine"))
        assert [row.tool for row in everything(audit, mine)] == ["mine"]
        assert {row.tenant_id for row in everything(audit, theirs)} == {theirs}
        assert everything(audit, new_tenant()) == []
