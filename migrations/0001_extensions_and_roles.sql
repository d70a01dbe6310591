-- The vector type, and the application role: it logs in, owns nothing, is no superuser and cannot
-- bypass row-level security. Roles are cluster-wide, so creation is conditional.
CREATE EXTENSION IF NOT EXISTS vector;

DO $$
DECLARE
  existing pg_roles%ROWTYPE;
BEGIN
  SELECT * INTO existing FROM pg_roles WHERE rolname = '{{app_role}}';
  IF NOT FOUND THEN
    BEGIN
      CREATE ROLE {{app_role}} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
    EXCEPTION WHEN duplicate_object THEN
      NULL;  -- another database of this cluster migrated at the same moment; advisory locks are per database
    END;
  ELSIF existing.rolsuper OR existing.rolbypassrls OR existing.rolreplication OR existing.rolcreaterole
        OR NOT existing.rolcanlogin THEN
    -- Not altered here: on Aurora the migrating role may not touch these attributes, and a role that
    -- can bypass row-level security must never quietly become the application's.
    RAISE EXCEPTION 'role {{app_role}} exists but is superuser, BYPASSRLS, REPLICATION, CREATEROLE or cannot log in'
      USING HINT = 'ALTER ROLE {{app_role}} LOGIN NOSUPERUSER NOBYPASSRLS NOREPLICATION NOCREATEROLE as a superuser, then migrate again';
  END IF;
  -- On Aurora the role authenticates with IAM through RDS Proxy.
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'rds_iam') THEN
    GRANT rds_iam TO {{app_role}};
  END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO {{app_role}};

-- The tenant of the current transaction, or NULL when none was set. Policies compare against it, and
-- NULL matches no row: a connection that forgot to set a tenant sees nothing and can write nothing.
CREATE FUNCTION current_tenant() RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT nullif(current_setting('quire.tenant_id', true), '') $$;
