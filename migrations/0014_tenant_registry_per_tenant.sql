-- The tenant registry, readable for the current tenant only. 0004 let the application role read every row
-- (`USING (true)`) so that the sweeps could walk the tenants; any query of that role could list them all.
-- The sweeps now walk them through one narrow path, tenant_ids_for_sweeps(): the ids, nothing else.

DROP POLICY tenant_ids_are_listed ON tenants;
CREATE POLICY tenant_reads_itself ON tenants FOR SELECT USING (tenant_id = current_tenant());

-- The function runs as its owner, the migrating role. FORCE ROW LEVEL SECURITY binds a table's owner too
-- (on Aurora the owner is no superuser and has no BYPASSRLS), so that role alone gets a policy listing every
-- id. The application role cannot act as the owner: migrations/runner.py refuses it any role membership.
CREATE POLICY owner_lists_tenant_ids ON tenants FOR SELECT TO CURRENT_USER USING (true);

-- SECURITY DEFINER, made safe: no arguments, one fixed query, names schema-qualified, and a fixed search_path
-- with pg_temp last, so a caller's own objects can never be resolved in its place.
CREATE FUNCTION tenant_ids_for_sweeps() RETURNS TABLE (tenant_id text)
  LANGUAGE sql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
  AS $$ SELECT t.tenant_id FROM public.tenants AS t $$;
REVOKE ALL ON FUNCTION tenant_ids_for_sweeps() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tenant_ids_for_sweeps() TO {{app_role}};
