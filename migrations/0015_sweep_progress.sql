-- Fair reconciliation (issue 16): each tenant gets a bounded turn per run, so one tenant's backlog cannot keep
-- another's deletions from being swept. The schedule starts every run with no state, so where each tenant's
-- sweeps stopped, and when its last turn was, are kept here.

-- Where one sweep of one tenant stopped: the keyset (updated_at, version_id) of the last row it handled.
CREATE TABLE sweep_progress (
  tenant_id        text        NOT NULL REFERENCES tenants (tenant_id),
  sweep            text        NOT NULL CHECK (sweep IN ('deleting', 'pending', 'awaiting_processing', 'given_up')),
  after_updated_at timestamptz NOT NULL,
  after_version_id uuid        NOT NULL,
  saved_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, sweep)
);
ALTER TABLE sweep_progress ENABLE ROW LEVEL SECURITY;
ALTER TABLE sweep_progress FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sweep_progress
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON sweep_progress TO {{app_role}};

-- When the tenant last had its turn: a run starts with the tenants whose turn is longest ago. Listed with the
-- ids (already readable, no content); each tenant's transaction may set its own, and only this column.
ALTER TABLE tenants ADD COLUMN last_turn_at timestamptz;
CREATE POLICY tenant_records_its_turn ON tenants FOR UPDATE
  USING (tenant_id = current_tenant()) WITH CHECK (tenant_id = current_tenant());
GRANT UPDATE (last_turn_at) ON tenants TO {{app_role}};

-- The turn order is read across tenants, and the registry shows a role its current tenant only (0014): one more
-- narrow path like tenant_ids_for_sweeps(), the ids and their last turn, nothing else.
CREATE FUNCTION tenant_turns_for_sweeps() RETURNS TABLE (tenant_id text, last_turn_at timestamptz)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$ SELECT t.tenant_id, t.last_turn_at FROM public.tenants AS t $$;
REVOKE ALL ON FUNCTION tenant_turns_for_sweeps() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tenant_turns_for_sweeps() TO {{app_role}};
