-- Definitions: authorization. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.app_diary_ids() RETURNS uuid[]
    LANGUAGE sql STABLE
    AS $$
    select nullif(pg_catalog.current_setting('app.diary_ids', true), '')::pg_catalog.uuid[]
$$;

COMMENT ON FUNCTION public.app_diary_ids() IS 'The caller''s diaries (app.diary_ids), as an array a policy compares against once per statement; refresh_app_diary_ids() fills it, so a policy costs no query. Inlinable, like app_user_id().';

REVOKE ALL ON FUNCTION public.app_diary_ids() FROM PUBLIC;
GRANT ALL ON FUNCTION public.app_diary_ids() TO diary_app;

CREATE OR REPLACE FUNCTION public.app_user_id() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$
    select nullif(pg_catalog.current_setting('app.user_id', true), '')::pg_catalog.uuid
$$;

COMMENT ON FUNCTION public.app_user_id() IS 'The caller, as set for this transaction by authenticate() (app.user_id); null when unset. Every policy reads it, so it is plain SQL with no SET clause that names everything by schema, which lets PostgreSQL inline it.';

REVOKE ALL ON FUNCTION public.app_user_id() FROM PUBLIC;
GRANT ALL ON FUNCTION public.app_user_id() TO diary_app;

CREATE OR REPLACE FUNCTION public.require_caller() RETURNS uuid
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := app_user_id();
begin
    if caller is null then
        raise exception 'the session has ended; sign in again' using errcode = 'ZN401';
    end if;
    return caller;
end
$$;

COMMENT ON FUNCTION public.require_caller() IS 'The caller (app_user_id()), or the refusal unauthorized (ZN401) when there is none: the one caller check of every function that acts for the caller.';

REVOKE ALL ON FUNCTION public.require_caller() FROM PUBLIC;
GRANT ALL ON FUNCTION public.require_caller() TO diary_app;

CREATE OR REPLACE FUNCTION public.app_visible_user_ids() RETURNS uuid[]
    LANGUAGE sql STABLE
    AS $$
    select coalesce(nullif(pg_catalog.current_setting('app.visible_user_ids', true), '')::pg_catalog.uuid[], '{}')
$$;

COMMENT ON FUNCTION public.app_visible_user_ids() IS 'The users whose row the caller may see (users_select): themself and the members of their diaries that are not anonymous, so anonymous co-members stay hidden even from a query that forgets member_profiles'' aliases. Read from app.visible_user_ids, which refresh_app_diary_ids() sets, and inlinable.';

REVOKE ALL ON FUNCTION public.app_visible_user_ids() FROM PUBLIC;
GRANT ALL ON FUNCTION public.app_visible_user_ids() TO diary_app;

CREATE OR REPLACE FUNCTION public.assume_server_role() RETURNS text[]
    LANGUAGE plpgsql
    AS $$
declare
    previous constant text[] := array[
        pg_catalog.current_setting('role'),
        coalesce(pg_catalog.current_setting('citus.allow_nested_distributed_execution', true), 'off')];
begin
    if current_user = 'diary_app' then
        return null;
    end if;
    set local role diary_app;
    -- On a Citus worker the response's reads run inside the routed statement that called it:
    -- a nested execution, on the diary's own shards and the reference tables, all local.
    perform pg_catalog.set_config('citus.allow_nested_distributed_execution', 'on', true);
    return previous;
end
$$;

COMMENT ON FUNCTION public.assume_server_role() IS 'Takes diary_app, the server''s role, for the rest of the transaction when the statement runs as another role, and answers what to give back to leave_server_role() (null when it changed nothing). A write''s answer (diary_response, entry_response) reads through the caller''s policies this way on a Citus worker, where it runs in the schema owner''s connection: the only one that sees what the write''s SECURITY DEFINER function changed there. Inside a SECURITY DEFINER function it fails (42501) rather than read as the owner. The owner is a member of diary_app for this (sql/roles.sql; migrate --citus checks every node).';

REVOKE ALL ON FUNCTION public.assume_server_role() FROM PUBLIC;
GRANT ALL ON FUNCTION public.assume_server_role() TO diary_app;

CREATE OR REPLACE FUNCTION public.leave_server_role(previous text[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
begin
    perform pg_catalog.set_config('role', previous[1], true);
    perform pg_catalog.set_config('citus.allow_nested_distributed_execution', previous[2], true);
end
$$;

COMMENT ON FUNCTION public.leave_server_role(previous text[]) IS 'Gives back what assume_server_role() took: the role and the nested execution setting as they were before it.';

REVOKE ALL ON FUNCTION public.leave_server_role(previous text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.leave_server_role(previous text[]) TO diary_app;

CREATE OR REPLACE FUNCTION public.diary_verdict(diary uuid) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    if app_user_id() is null or not (diary = any (app_diary_ids())) then
        return 'not_found';
    end if;
    return case when is_diary_owner(diary) then 'permitted' else 'forbidden' end;
end
$$;

COMMENT ON FUNCTION public.diary_verdict(diary uuid) IS 'What the diaries policies answer the caller about changing a diary: not_found, forbidden, or permitted.';

REVOKE ALL ON FUNCTION public.diary_verdict(diary uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.entry_verdict(diary uuid, entry uuid) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    author uuid;
begin
    if app_user_id() is null or not (diary = any (app_diary_ids())) then
        return 'not_found';
    end if;
    perform 1 from diaries d where d.id = diary for no key update;
    select e.user_id into author from entries e where e.diary_id = diary and e.id = entry for update;
    if not found then
        return 'not_found';
    end if;
    return case when author = app_user_id() then 'permitted' else 'forbidden' end;
end
$$;

COMMENT ON FUNCTION public.entry_verdict(diary uuid, entry uuid) IS 'What the entries policies answer the caller about changing an entry: not_found, forbidden, or permitted (the row then locked).';

REVOKE ALL ON FUNCTION public.entry_verdict(diary uuid, entry uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.forbid_key_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    raise exception 'the keys of % cannot change', tg_table_name using errcode = '23514', constraint = tg_name;
end
$$;

COMMENT ON FUNCTION public.forbid_key_change() IS 'Trigger: an entry or a read receipt never moves to another diary, author or reader, because the counters account for each under its keys. It runs after the row is checked, so that the row-level policies refuse such moves first (42501).';

REVOKE ALL ON FUNCTION public.forbid_key_change() FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.is_diary_member(diary uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return exists (select 1 from diary_members m where m.diary_id = diary and m.user_id = app_user_id());
end
$$;

COMMENT ON FUNCTION public.is_diary_member(diary uuid) IS 'Whether the caller is a member of the diary. SECURITY DEFINER, because it reads diary_members beneath that table''s own policy.';

REVOKE ALL ON FUNCTION public.is_diary_member(diary uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.is_diary_member(diary uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.is_diary_owner(diary uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return exists (select 1 from diary_members m where m.diary_id = diary and m.user_id = app_user_id() and m.role = 'owner');
end
$$;

COMMENT ON FUNCTION public.is_diary_owner(diary uuid) IS 'Whether the caller owns the diary, for the policies that let only the owner change or delete a diary or remove another member. SECURITY DEFINER, because it reads diary_members beneath that table''s own policy.';

REVOKE ALL ON FUNCTION public.is_diary_owner(diary uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.is_diary_owner(diary uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.refresh_app_diary_ids() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := app_user_id();
begin
    if caller is null then
        perform set_app_setting('app.diary_ids', '{}'), set_app_setting('app.visible_user_ids', '{}');
        return;
    end if;
    perform
        set_app_setting('app.diary_ids', array(select u.diary_id from user_diaries u where u.user_id = caller)::text),
        set_app_setting('app.visible_user_ids', array(
            select caller
            union
            select co.user_id
            from user_diaries mine
            join user_diaries co on co.diary_id = mine.diary_id
            where mine.user_id = caller and mine.diary_type <> 'anonymous'
        )::text);
end
$$;

COMMENT ON FUNCTION public.refresh_app_diary_ids() IS 'Computes the caller''s diaries and the users they may see (app.diary_ids, app.visible_user_ids) for this transaction, when the identity is set and whenever a membership changes. SECURITY DEFINER, because it reads diary_members beneath its policy; it only ever answers for the caller.';

REVOKE ALL ON FUNCTION public.refresh_app_diary_ids() FROM PUBLIC;
GRANT ALL ON FUNCTION public.refresh_app_diary_ids() TO diary_app;

CREATE OR REPLACE FUNCTION public.refuse_direct_write() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    if not (coalesce(current_setting('app.writer', true), '') = any (tg_argv || '{citus_layout}'::text[])) then
        raise exception '% on % is made only by %(), which keep its side effects', tg_op, tg_table_name, array_to_string(tg_argv, '(), ')
            using errcode = 'insufficient_privilege';
    end if;
    if tg_op = 'DELETE' then
        return old;
    end if;
    return new;
end
$$;

COMMENT ON FUNCTION public.refuse_direct_write() IS 'Trigger: refuses a write to its table unless one of the functions named in its arguments makes it (app.writer), so that no path, not even an operator''s psql or a cascade, skips the side effects those functions make.';

CREATE OR REPLACE FUNCTION public.set_app_setting(setting text, value text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
    AS $_$
begin
    if setting !~ '^app\.[a-z_]+$' then
        raise exception 'not an app setting: %', setting using errcode = '22023';

COMMENT ON FUNCTION public.set_app_setting(setting text, value text) IS 'Sets an app.* setting for the current transaction so that it reaches every node: on Citus by SET LOCAL with citus.propagate_set_commands = local, because the workers'' policies read it, and on a single PostgreSQL by set_config. The caller''s identity and diaries are set through it.';

REVOKE ALL ON FUNCTION public.set_app_setting(setting text, value text) FROM PUBLIC;
    end if;
    if current_setting('citus.propagate_set_commands', true) is null then
        perform set_config(setting, value, true);
    else
        set local citus.propagate_set_commands = 'local';
        execute format('set local %s = %L', setting, value);
    end if;
end
$_$;

CREATE OR REPLACE FUNCTION public.set_updated_at() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    if new is distinct from old then
        new.updated_at := now();
    end if;
    return new;
end
$$;

COMMENT ON FUNCTION public.set_updated_at() IS 'Trigger: sets updated_at to now() when an update changes the row. An update that changes nothing leaves it alone, so updated_at says when the row last changed, not when it was last written.';

REVOKE ALL ON FUNCTION public.set_updated_at() FROM PUBLIC;
GRANT ALL ON FUNCTION public.set_updated_at() TO diary_app;
