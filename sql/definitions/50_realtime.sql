-- Definitions: realtime. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.announce(channel text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
    AS $$
declare
    pending text[] := coalesce(string_to_array(nullif(current_setting('app.announce', true), ''), ','), '{}');
begin
    if not channel = any (pending) then
        -- For the session, not the transaction: announce_pending runs after the COMMIT.
        perform set_config('app.announce', array_to_string(pending || channel, ','), false);
    end if;
end
$$;

COMMENT ON FUNCTION public.announce(channel text) IS 'Names a channel to NOTIFY once the transaction has committed (a session setting, which a rollback undoes); announce_pending sends it.';

CREATE OR REPLACE FUNCTION public.announce(channel text, payload text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    perform announce(channel || ':' || payload);
end
$$;

COMMENT ON FUNCTION public.announce(channel text, payload text) IS 'Like announce(channel): the NOTIFY sent after the COMMIT carries payload; identical ones fold.';

CREATE OR REPLACE FUNCTION public.announce_latest(channel text, subject text, detail text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
    AS $$
declare
    announced constant text := channel || ':' || subject || ' ';
    pending text := coalesce(current_setting('app.announce', true), '');
    found_at constant integer := strpos(',' || pending, ',' || announced);
    length_with_comma integer;
begin
    -- The whole channel is announced already (below): its listeners read everything.
    if strpos(',' || pending || ',', ',' || channel || ',') > 0 then
        return;
    end if;
    if found_at > 0 then
        -- One pending announcement a subject, the latest.
        length_with_comma := strpos(substr(pending, found_at) || ',', ',');
        pending := left(pending, found_at - 1) || announced || detail || substr(pending, found_at + length_with_comma - 1);
    elsif length(pending) > 8192 then
        -- Some hundred subjects (a bulk load in psql, which never sends them, keeps one for
        -- each diary it wrote): the channel alone stands for them all, and keeps each
        -- change's cost from growing with the list.
        pending := array_to_string(array(
            select p from unnest(string_to_array(pending, ',')) p where not starts_with(p, channel || ':')) || channel, ',');
    else
        pending := case when pending = '' then '' else pending || ',' end || announced || detail;
    end if;
    perform set_config('app.announce', pending, false);
end
$$;

COMMENT ON FUNCTION public.announce_latest(channel text, subject text, detail text) IS 'Announces ''subject detail'' on channel once the transaction commits (announce_pending), replacing what was announced of the same subject before; past some hundred subjects, the channel alone, which its listeners take as everything.';

CREATE OR REPLACE FUNCTION public.announce_pending() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog'
    AS $$
declare
    pending text;
    split integer;
begin
    foreach pending in array coalesce(string_to_array(nullif(current_setting('app.announce', true), ''), ','), '{}') loop
        split := position(':' in pending);
        if split = 0 then
            perform pg_notify(pending, '');
        else
            perform pg_notify(left(pending, split - 1), substr(pending, split + 1));
        end if;
    end loop;
    perform set_config('app.announce', '', false);
end
$$;

COMMENT ON FUNCTION public.announce_pending() IS 'Run by the server after its COMMIT, in the same round trip: NOTIFYs each channel the transaction announced, and clears them. A NOTIFY inside the transaction would hold its commit behind the lock every notifying commit takes.';

GRANT ALL ON FUNCTION public.announce_pending() TO diary_app;

CREATE OR REPLACE FUNCTION public.announce_session_end(session uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    perform announce_latest('sessions_ended', session::text, 'ended');
end
$$;

COMMENT ON FUNCTION public.announce_session_end(session uuid) IS 'Announces on sessions_ended, once the transaction commits, a session that a sign-out, an account''s deletion, Apple''s revoked consent or a reused refresh token ended: the realtime feed closes its sockets at once (ChangeFeed). Called by what ends the session, since a trigger here would be one with effects beyond its row, which Citus cannot run (CitusSchemaTests).';

REVOKE ALL ON FUNCTION public.announce_session_end(session uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.announce_session_end(session uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.change_positions(diaries uuid[]) RETURNS TABLE(diary_id uuid, change_position bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query select d.id, d.change_position from diaries d where d.id = any (diaries);
end
$$;

COMMENT ON FUNCTION public.change_positions(diaries uuid[]) IS 'For the servers'' realtime feeds: the current position of each of these diaries.';

REVOKE ALL ON FUNCTION public.change_positions(diaries uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.change_positions(diaries uuid[]) TO diary_app;

CREATE OR REPLACE FUNCTION public.log_change(diary uuid, kind text, entry uuid DEFAULT NULL::uuid, member uuid DEFAULT NULL::uuid, alias uuid DEFAULT NULL::uuid) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    logged bigint;
begin
    -- A departure and a deletion show nobody anything new: a former member's restore may come
    -- after them, never after any other change (departure_restorable).
    update diaries d set change_position = d.change_position + 1,
        shared_position = case when log_change.kind in ('member.left', 'entry.deleted') then d.shared_position else d.change_position + 1 end
    where d.id = diary returning d.change_position into logged;
    if logged is not null then
        perform log_change_at(diary, logged, kind, entry, member, alias);
    end if;
    return logged;
end
$$;

COMMENT ON FUNCTION public.log_change(diary uuid, kind text, entry uuid, member uuid, alias uuid) IS 'Takes the diary''s next position under its row lock and appends the change there (log_change_at); null when the diary is gone. The only way a change is logged but for post_entry_as, which takes the position with its count.';

REVOKE ALL ON FUNCTION public.log_change(diary uuid, kind text, entry uuid, member uuid, alias uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.log_change_at(diary uuid, logged bigint, kind text, entry uuid DEFAULT NULL::uuid, member uuid DEFAULT NULL::uuid, alias uuid DEFAULT NULL::uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    insert into change_log (diary_id, position, kind, entry_id, user_id, user_alias)
    values (diary, logged, log_change_at.kind, entry, member, alias);
    -- The feed wakes the diary's followers, knowing how far it has moved, with no read; when
    -- who is in the diary changed, it reads its members too.
    perform announce_latest('diary_changes',
        case when kind in ('member.joined', 'member.left') then 'members ' else '' end || diary::text, logged::text);
end
$$;

COMMENT ON FUNCTION public.log_change_at(diary uuid, logged bigint, kind text, entry uuid, member uuid, alias uuid) IS 'Appends a change at a position the caller took on the diary''s row, and announces diary_changes.';

REVOKE ALL ON FUNCTION public.log_change_at(diary uuid, logged bigint, kind text, entry uuid, member uuid, alias uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.my_positions_at_join() RETURNS TABLE(diary_id uuid, position_at_join bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query select u.diary_id, u.position_at_join from user_diaries u where u.user_id = app_user_id();
end
$$;

COMMENT ON FUNCTION public.my_positions_at_join() IS 'The caller''s diaries, each with the position before they joined it.';

REVOKE ALL ON FUNCTION public.my_positions_at_join() FROM PUBLIC;
GRANT ALL ON FUNCTION public.my_positions_at_join() TO diary_app;

CREATE OR REPLACE FUNCTION public.prune_change_log(older_than interval, max_rows integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    cutoff constant timestamptz := now() - greatest(older_than, interval '30 days');
    aged record;
    through bigint;
    deleted integer;
    removed integer := 0;
begin
    if not pg_try_advisory_xact_lock(hashtext('prune_change_log')) then
        return 0;
    end if;
    for aged in select c.diary_id from change_log c where c.at < cutoff group by c.diary_id loop
        exit when removed >= max_rows;
        select coalesce(min(c.position) filter (where c.at >= cutoff) - 1, max(c.position)) into through
        from change_log c where c.diary_id = aged.diary_id;
        delete from change_log c where c.diary_id = aged.diary_id and c.position <= through;
        get diagnostics deleted = row_count;
        update diaries d set pruned_position = through where d.id = aged.diary_id and d.pruned_position < through;
        removed := removed + deleted;
    end loop;
    return removed;
end
$$;

COMMENT ON FUNCTION public.prune_change_log(older_than interval, max_rows integer) IS 'Removes changes older than older_than, never younger than 30 days, diary by diary up to the first younger one, unless another server is pruning; records pruned_position; stops after about max_rows and returns how many it removed.';

REVOKE ALL ON FUNCTION public.prune_change_log(older_than interval, max_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.prune_change_log(older_than interval, max_rows integer) TO diary_app;

-- Policies

DROP POLICY IF EXISTS change_log_delete ON public.change_log;
CREATE POLICY change_log_delete ON public.change_log FOR DELETE USING (false);

DROP POLICY IF EXISTS change_log_insert ON public.change_log;
CREATE POLICY change_log_insert ON public.change_log FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS change_log_select ON public.change_log;
CREATE POLICY change_log_select ON public.change_log FOR SELECT USING ((((diary_id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[])) IS TRUE) OR ((kind = 'member.left'::text) AND (user_id = ( SELECT public.app_user_id() AS app_user_id)))));

DROP POLICY IF EXISTS change_log_update ON public.change_log;
CREATE POLICY change_log_update ON public.change_log FOR UPDATE USING (false) WITH CHECK (false);
