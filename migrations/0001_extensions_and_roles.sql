-- The vector type, and the application role: it logs in, owns nothing, is no superuser and cannot
-- bypass row-level security. Roles are cluster-wide, so creation is conditional.
CREATE EXTENSION IF NOT EXISTS vector;

DO $$
BEGIN
  -- Iterative index scans (a small tenant still gets k nearest rows through a filter) arrived in 0.8.
  IF (SELECT string_to_array(extversion, '.')::int[] FROM pg_extension WHERE extname = 'vector') < ARRAY[0, 8] THEN
    RAISE EXCEPTION 'pgvector % is too old: Quire needs 0.8 or newer',
      (SELECT extversion FROM pg_extension WHERE extname = 'vector')
      USING HINT = 'ALTER EXTENSION vector UPDATE, or install pgvector 0.8+';
  END IF;
END
$$;

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
  -- Membership would let it SET ROLE to a role that owns the tables (and so escape their policies).
  IF EXISTS (
    SELECT FROM pg_auth_members m JOIN pg_roles granted ON granted.oid = m.roleid
    WHERE m.member = (SELECT oid FROM pg_roles WHERE rolname = '{{app_role}}') AND granted.rolname <> 'rds_iam'
  ) THEN
    RAISE EXCEPTION 'role {{app_role}} is a member of other roles and could act as them'
      USING HINT = 'REVOKE those roles from {{app_role}}, then migrate again';
  END IF;
  -- On Aurora the role authenticates with IAM through RDS Proxy.
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'rds_iam') THEN
    GRANT rds_iam TO {{app_role}};
  END IF;
END
$$;

-- PostgreSQL before 15 lets every role create objects in public; an object the application role
-- created would be one it owns, and an owner is not bound by its table's policies.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO {{app_role}};

-- The tenant of the current transaction, or NULL when none was set. Policies compare against it, and
-- NULL matches no row: a connection that forgot to set a tenant sees nothing and can write nothing.
CREATE FUNCTION current_tenant() RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT nullif(current_setting('quire.tenant_id', true), '') $$;
