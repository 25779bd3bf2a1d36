-- The read-only `sql` tool's database role (issue 14): the database, not the query text, decides what
-- the tool may do. `longhaul_sql_reader` can log in and SELECT from the tables of schema `sql_tool`
-- (the reference data a user loads for the tool), and nothing else: no write, no DDL, no other schema.
-- Point LONGHAUL_SQL_TOOL_URL at it: postgres://longhaul_sql_reader[:password]@host:port/longhaul.
CREATE SCHEMA IF NOT EXISTS sql_tool;

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'longhaul_sql_reader') THEN
    CREATE ROLE longhaul_sql_reader LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION;
  END IF;
EXCEPTION WHEN insufficient_privilege THEN
  -- A managed database whose migrating user may not create roles: an administrator creates it (docs/DEPLOY.md).
  RAISE NOTICE 'longhaul_sql_reader not created (no CREATEROLE privilege); create it as an administrator';
END
$$;

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'longhaul_sql_reader') THEN
    -- Roles are cluster-wide: whatever another database granted, here it reads sql_tool only.
    EXECUTE format('REVOKE ALL ON DATABASE %I FROM longhaul_sql_reader', current_database());
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO longhaul_sql_reader', current_database());
    REVOKE ALL ON SCHEMA public FROM longhaul_sql_reader;
    REVOKE CREATE ON SCHEMA public FROM PUBLIC;
    GRANT USAGE ON SCHEMA sql_tool TO longhaul_sql_reader;
    GRANT SELECT ON ALL TABLES IN SCHEMA sql_tool TO longhaul_sql_reader;
    -- Tables the migrating user creates in sql_tool later are readable too.
    ALTER DEFAULT PRIVILEGES IN SCHEMA sql_tool GRANT SELECT ON TABLES TO longhaul_sql_reader;
    ALTER ROLE longhaul_sql_reader SET search_path = sql_tool;
    ALTER ROLE longhaul_sql_reader SET default_transaction_read_only = on;
  END IF;
END
$$;
