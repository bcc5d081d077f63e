-- The cluster's two roles for Zutto Nikki. Run once per cluster, as a superuser, before
-- migrating:  psql -v ON_ERROR_STOP=1 -f sql/roles.sql
-- (scripts/postgres.sh does it for `make run` and `make test`; compose.yaml at first start.)
--   diary_owner  owns the schema and runs the migrations (MIGRATION_DATABASE_URL). BYPASSRLS,
--                so the SECURITY DEFINER functions, which check their caller themselves,
--                see past the row-level policies.
--   diary_app    the server's role (DATABASE_URL): owns nothing, no BYPASSRLS; every policy applies.
--   diary_owner is a member of diary_app, so that on a Citus worker, inside the owner's
--   connection, a write's answer is read as diary_app (assume_server_role); that gives the
--   owner nothing it lacks.
-- Set passwords separately where connections are not trusted: alter role … password ….
select 'create role diary_owner login createdb' where not exists (select from pg_roles where rolname = 'diary_owner') \gexec
select 'create role diary_app login' where not exists (select from pg_roles where rolname = 'diary_app') \gexec
alter role diary_owner bypassrls;
alter role diary_app nobypassrls nosuperuser nocreatedb nocreaterole;
grant diary_app to diary_owner;
