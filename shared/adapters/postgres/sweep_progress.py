"""SweepProgress over PostgreSQL (migrations/0015): per tenant, where each sweep stopped and when its turn was."""

from datetime import datetime
from uuid import UUID

from shared.adapters.postgres.database import Database
from shared.ports import SweepProgress

SWEEPS = frozenset({"deleting", "pending", "awaiting_processing", "given_up", "bytes_present"})


def _known(sweep: str) -> str:
    if sweep not in SWEEPS:
        raise ValueError(f"unknown sweep {sweep!r}; the sweeps are {sorted(SWEEPS)}")
    return sweep


class PostgresSweepProgress(SweepProgress):
    def __init__(self, database: Database) -> None:
        self._database = database

    def tenants_in_turn(self) -> list[str]:
        with self._database.unscoped_transaction() as conn:
            rows = conn.execute(
                "SELECT tenant_id FROM tenant_turns_for_sweeps() ORDER BY last_turn_at NULLS FIRST, tenant_id"
            )
            return [row[0] for row in rows]

    def resume_point(self, tenant_id: str, sweep: str) -> tuple[datetime, UUID] | None:
        with self._database.tenant_transaction(tenant_id) as conn:
            row = conn.execute(
                "SELECT after_updated_at, after_version_id FROM sweep_progress WHERE tenant_id = %s AND sweep = %s",
                (tenant_id, _known(sweep)),
            ).fetchone()
        return (row[0], row[1]) if row else None

    def save_resume_point(self, tenant_id: str, sweep: str, after: tuple[datetime, UUID] | None) -> None:
        with self._database.tenant_transaction(tenant_id) as conn:
            if after is None:
                conn.execute(
                    "DELETE FROM sweep_progress WHERE tenant_id = %s AND sweep = %s", (tenant_id, _known(sweep))
                )
                return
            conn.execute(
                "INSERT INTO sweep_progress (tenant_id, sweep, after_updated_at, after_version_id)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (tenant_id, sweep) DO UPDATE SET"
                " after_updated_at = excluded.after_updated_at, after_version_id = excluded.after_version_id,"
                " saved_at = now()",
                (tenant_id, _known(sweep), after[0], after[1]),
            )

    def end_turn(self, tenant_id: str) -> None:
        with self._database.tenant_transaction(tenant_id) as conn:
            conn.execute("UPDATE tenants SET last_turn_at = now() WHERE tenant_id = %s", (tenant_id,))
