-- The vector type, and the application role: it logs in, owns nothing, is no superuser and cannot
-- bypass row-level security. Roles are cluster-wide, so creation is conditional.
CREATE EXTENSION IF NOT EXISTS vector;

DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{{app_role}}') THEN
    CREATE ROLE {{app_role}} LOGIN;
  END IF;
  -- On Aurora the role authenticates with IAM through RDS Proxy.
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'rds_iam') THEN
    GRANT rds_iam TO {{app_role}};
  END IF;
END
$$;

-- Whatever the role was before, it is now exactly this.
ALTER ROLE {{app_role}} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;

GRANT USAGE ON SCHEMA public TO {{app_role}};

-- The tenant of the current transaction, or NULL when none was set. Policies compare against it, and
-- NULL matches no row: a connection that forgot to set a tenant sees nothing and can write nothing.
CREATE FUNCTION current_tenant() RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT nullif(current_setting('quire.tenant_id', true), '') $$;
