-- Definitions: departures. A diary whose last member leaves is closed, not deleted: its
-- former members may restore it, or export their own entries, for the window the server
-- states (CLOSED_DIARY_RETENTION_DAYS, passed in as kept); then the closed-diary worker
-- deletes it. Applied by `migrate` after the versioned migrations whenever this file's text
-- changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.departure_kept_until(left_at timestamp with time zone, closed_at timestamp with time zone, purge_at timestamp with time zone, kept interval) RETURNS timestamp with time zone
    LANGUAGE sql IMMUTABLE
    AS $$
    select case when closed_at is null or left_at + kept <= closed_at then left_at + kept else coalesce(purge_at, closed_at + kept) end
$$;

COMMENT ON FUNCTION public.departure_kept_until(left_at timestamp with time zone, closed_at timestamp with time zone, purge_at timestamp with time zone, kept interval) IS 'Until when a former member may export their own entries of a diary they left (and restore it, when closed): the window after they left, for an open diary or one that closed after that window ended; else the date the closed diary is deleted, once its former members were told it (purge_at), or its close plus the window.';

REVOKE ALL ON FUNCTION public.departure_kept_until(left_at timestamp with time zone, closed_at timestamp with time zone, purge_at timestamp with time zone, kept interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.departure_kept_until(left_at timestamp with time zone, closed_at timestamp with time zone, purge_at timestamp with time zone, kept interval) TO diary_app;

CREATE OR REPLACE FUNCTION public.departure_restorable(removed boolean, left_position bigint, shared_position bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    AS $$
    select not removed and left_position is not null and shared_position < left_position
$$;

COMMENT ON FUNCTION public.departure_restorable(removed boolean, left_position bigint, shared_position bigint) IS 'Whether a former member may restore the diary once it closes: they left it themself (its owner did not remove them), and nobody changed it after they left (its newest change that is neither a departure nor a deletion, shared_position, comes before theirs). So a restore shows nobody an entry, photo, receipt, name or member they could not read as a member.';

REVOKE ALL ON FUNCTION public.departure_restorable(removed boolean, left_position bigint, shared_position bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.departure_restorable(removed boolean, left_position bigint, shared_position bigint) TO diary_app;

CREATE OR REPLACE FUNCTION public.departed_diary_ids(kept interval) RETURNS uuid[]
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return (
        select coalesce(array_agg(f.diary_id order by f.diary_id), '{}')
        from former_members f
        join diaries d on d.id = f.diary_id
        where f.user_id = app_user_id() and now() < departure_kept_until(f.left_at, d.closed_at, d.purge_at, kept)
    );
end
$$;

COMMENT ON FUNCTION public.departed_diary_ids(kept interval) IS 'The diaries the caller left whose window is still open: theirs to export their own entries from. Read once per export, so the pages after it route by diary.';

REVOKE ALL ON FUNCTION public.departed_diary_ids(kept interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.departed_diary_ids(kept interval) TO diary_app;

-- Its result gained `restorable`; no serving release calls it (released-signatures.txt).
DROP FUNCTION IF EXISTS public.my_departures(kept interval);

CREATE FUNCTION public.my_departures(kept interval) RETURNS TABLE(diary_id uuid, name text, type text, left_at timestamp with time zone, closed_at timestamp with time zone, kept_until timestamp with time zone, own_entries bigint, restorable boolean)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query
        select f.diary_id, f.diary_name, d.type, f.left_at, d.closed_at, departure_kept_until(f.left_at, d.closed_at, d.purge_at, kept),
            (select count(*) from entries e where e.diary_id = f.diary_id and e.user_id = app_user_id()),
            d.closed_at is not null and departure_restorable(f.removed, f.left_position, d.shared_position)
        from former_members f
        join diaries d on d.id = f.diary_id
        where f.user_id = app_user_id() and now() < departure_kept_until(f.left_at, d.closed_at, d.purge_at, kept)
        order by f.left_at desc, f.diary_id;
end
$$;

COMMENT ON FUNCTION public.my_departures(kept interval) IS 'For the Data Safety Center: the diaries the caller left whose window is open, with the name it had when they left, whether each is closed and theirs to restore (departure_restorable), until when it is kept, and how many of their own entries it holds.';

REVOKE ALL ON FUNCTION public.my_departures(kept interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.my_departures(kept interval) TO diary_app;

CREATE OR REPLACE FUNCTION public.my_departed_entries(diaries uuid[], after_created_at timestamp with time zone, after_id uuid, page integer) RETURNS TABLE(id uuid, diary_id uuid, content text, question text, created_at timestamp with time zone, updated_at timestamp with time zone, photo_ids uuid[], photo_types text[])
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query
        select e.id, e.diary_id, e.content, e.question, e.created_at, e.updated_at,
            (select array_agg(p.id order by p.position) from entry_photos p where p.diary_id = e.diary_id and p.entry_id = e.id),
            (select array_agg(p.content_type order by p.position) from entry_photos p where p.diary_id = e.diary_id and p.entry_id = e.id)
        from entries e
        where e.user_id = app_user_id()
          and e.diary_id = any (diaries)
          and e.diary_id in (select f.diary_id from former_members f where f.user_id = app_user_id())
          and (after_created_at is null or (e.created_at, e.id) > (after_created_at, after_id))
        order by e.created_at, e.id
        limit page;
end
$$;

COMMENT ON FUNCTION public.my_departed_entries(diaries uuid[], after_created_at timestamp with time zone, after_id uuid, page integer) IS 'For the personal export: a page of the caller''s own entries in diaries they left (of those named, which departed_diary_ids gives), oldest first after the keyset, with their photos'' ids and types. Nobody else''s entries, and no diary they never left.';

REVOKE ALL ON FUNCTION public.my_departed_entries(diaries uuid[], after_created_at timestamp with time zone, after_id uuid, page integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.my_departed_entries(diaries uuid[], after_created_at timestamp with time zone, after_id uuid, page integer) TO diary_app;

CREATE OR REPLACE FUNCTION public.my_departed_entry_photos(diaries uuid[]) RETURNS TABLE(id uuid, content_hash text, content_type text, bytes integer, content_crc32 bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query
        select p.id, p.content_hash, p.content_type, p.bytes, p.content_crc32
        from entry_photos p
        join entries e on e.diary_id = p.diary_id and e.id = p.entry_id
        where e.user_id = app_user_id()
          and p.diary_id = any (diaries)
          and p.diary_id in (select f.diary_id from former_members f where f.user_id = app_user_id());
end
$$;

COMMENT ON FUNCTION public.my_departed_entry_photos(diaries uuid[]) IS 'For the personal export: the photos of the caller''s own entries in diaries they left (of those named), as the archive reads any photo table.';

REVOKE ALL ON FUNCTION public.my_departed_entry_photos(diaries uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.my_departed_entry_photos(diaries uuid[]) TO diary_app;

-- It gained the free plan's limit; no serving release calls it (released-signatures.txt).
DROP FUNCTION IF EXISTS public.restore_diary(diary uuid, kept interval);

CREATE OR REPLACE FUNCTION public.restore_diary(diary uuid, kept interval, free_limit integer) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := (select app_user_id());
    found_diary diaries%rowtype;
    departed former_members%rowtype;
    -- Drawn first and bound as a value: Citus refuses a volatile function in an UPDATE of a
    -- distributed table.
    code constant text := generate_invite_code();
begin
    if caller is null then
        return 'not_found';
    end if;
    -- Under the diary's row lock, as joins and leaves: a restore and the worker's purge, or two
    -- restores, take turns.
    select * into found_diary from diaries d where d.id = diary for update;
    select * into departed from former_members f where f.diary_id = diary and f.user_id = caller;
    if found_diary.id is null or departed.diary_id is null or departed.removed
       or now() >= departure_kept_until(departed.left_at, found_diary.closed_at, found_diary.purge_at, kept) then
        return 'not_found';
    end if;
    if found_diary.closed_at is null then
        return 'open';
    end if;
    if not departure_restorable(departed.removed, departed.left_position, found_diary.shared_position) then
        return 'forbidden';
    end if;
    -- A restore makes the caller an owner as a creation does, so it counts as one, under
    -- their row's lock (create_diary's count, after the diary's lock as every membership).
    perform 1 from users u where u.id = caller for no key update;
    if user_plan(caller) = 'free'
       and (select count(*) from user_diaries u where u.user_id = caller and u.role = 'owner') >= free_limit then
        raise exception 'this needs premium: a restore makes you its owner, and the free plan owns % diaries; upgrade, or leave a diary you own, then restore it', free_limit
            using errcode = 'ZN006';
    end if;
    -- A new invite code: whoever held the old one, a member the owner removed among them,
    -- joins no more.
    perform set_app_setting('app.writer', 'restore_diary');
    update diaries d set closed_at = null, purge_at = null, invite_code = code where d.id = diary;
    perform set_app_setting('app.writer', '');
    perform register_invite_code(diary);
    perform add_diary_member(diary, caller, 'owner');
    perform check_one_owner(diary);
    return 'restored';
end
$$;

COMMENT ON FUNCTION public.restore_diary(diary uuid, kept interval, free_limit integer) IS 'POST restore: a former member of a closed diary who may restore it (departure_restorable: they left it themself, and nobody changed it after), inside their window, opens it again as its owner, with every entry it held and a new invite code. It counts as a creation on the free plan (ZN006 past free_limit). Answers restored, open (the diary has members: join it with its invite code), forbidden (it changed after they left: they may export their own entries) or not_found (not theirs to restore, or its window has passed).';

REVOKE ALL ON FUNCTION public.restore_diary(diary uuid, kept interval, free_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.restore_diary(diary uuid, kept interval, free_limit integer) TO diary_app;

CREATE OR REPLACE FUNCTION public.schedule_closed_diaries(kept interval, batch integer) RETURNS TABLE(diary_id uuid, purge_at timestamp with time zone, notified integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    closed record;
    deletes_at timestamptz;
    queued integer;
begin
    for closed in
        select d.id from diaries d where d.closed_at is not null and d.purge_at is null order by d.closed_at, d.id limit batch
    loop
        -- Again under the row lock: a restore may have opened it since.
        select d.closed_at + kept into deletes_at from diaries d where d.id = closed.id and d.closed_at is not null and d.purge_at is null for update;
        continue when deletes_at is null;
        perform set_app_setting('app.writer', 'schedule_closed_diaries');
        update diaries d set purge_at = deletes_at where d.id = closed.id;
        perform set_app_setting('app.writer', '');
        -- Only to those who may act on it: a former member who left it themself, inside their
        -- window, told what they may do (restore, or export their own entries), under the
        -- name they knew. A member its owner removed is told nothing of it.
        insert into push_outbox (user_id, device_token, kind, diary_id, payload)
        select f.user_id, dv.token, 'diary_closed', closed.id,
            jsonb_build_object(
                'aps', jsonb_build_object(
                    'alert', jsonb_build_object(
                        'title', '「' || f.diary_name || '」が閉じられました',
                        'body', to_char(deletes_at at time zone u.time_zone, 'FMYYYY"年"FMMM"月"FMDD"日"')
                            || case when departure_restorable(f.removed, f.left_position, d.shared_position)
                                then 'に削除されます。それまでは復元でき、自分の日記を書き出せます。'
                                else 'に削除されます。それまでは自分の日記を書き出せます。' end),
                    'sound', 'default'),
                'diaryId', closed.id::text,
                'deletesAt', to_char(deletes_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                'restorable', departure_restorable(f.removed, f.left_position, d.shared_position))
        from former_members f
        join diaries d on d.id = f.diary_id
        join users u on u.id = f.user_id
        join devices dv on dv.user_id = f.user_id
        where f.diary_id = closed.id and not f.removed
          and now() < departure_kept_until(f.left_at, d.closed_at, deletes_at, kept)
        order by f.user_id, dv.token;
        get diagnostics queued = row_count;
        if queued > 0 then
            perform announce('push_outbox');
        end if;
        diary_id := closed.id;
        purge_at := deletes_at;
        notified := queued;
        return next;
    end loop;
end
$$;

COMMENT ON FUNCTION public.schedule_closed_diaries(kept interval, batch integer) IS 'The closed-diary worker, first: for up to batch closed diaries whose deletion date is not set, sets it (their close plus the window) and queues a push to the devices of each former member who may act on it (who left it themself, inside their window), under the name they knew, saying when it will be deleted and what they may do until then: restore it (departure_restorable) and export their own entries, or export alone.';

REVOKE ALL ON FUNCTION public.schedule_closed_diaries(kept interval, batch integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.schedule_closed_diaries(kept interval, batch integer) TO diary_app;

CREATE OR REPLACE FUNCTION public.purge_closed_diaries(batch integer) RETURNS SETOF uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    closed record;
begin
    for closed in
        select d.id from diaries d where d.closed_at is not null and d.purge_at <= now() order by d.purge_at, d.id limit batch
    loop
        -- Again under the row lock: a restore may have opened it since.
        perform 1 from diaries d where d.id = closed.id and d.closed_at is not null and d.purge_at <= now() for update;
        continue when not found;
        perform forget_diary(closed.id);
        return next closed.id;
    end loop;
end
$$;

COMMENT ON FUNCTION public.purge_closed_diaries(batch integer) IS 'The closed-diary worker, then: deletes up to batch closed diaries whose announced deletion date has passed (forget_diary, which queues their photos for the sweep), and returns their ids.';

REVOKE ALL ON FUNCTION public.purge_closed_diaries(batch integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.purge_closed_diaries(batch integer) TO diary_app;

CREATE OR REPLACE FUNCTION public.prune_former_members(kept interval, batch integer) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    expired record;
    pruned integer := 0;
begin
    for expired in
        select f.diary_id, f.user_id from former_members f join diaries d on d.id = f.diary_id
        where d.closed_at is null and f.left_at < now() - kept
        order by f.diary_id, f.user_id limit batch
    loop
        delete from former_members f where f.diary_id = expired.diary_id and f.user_id = expired.user_id;
        pruned := pruned + 1;
    end loop;
    return pruned;
end
$$;

COMMENT ON FUNCTION public.prune_former_members(kept interval, batch integer) IS 'The closed-diary worker, last: forgets up to batch departures from open diaries whose window has passed. A closed diary keeps every former member until it is restored or deleted.';

REVOKE ALL ON FUNCTION public.prune_former_members(kept interval, batch integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.prune_former_members(kept interval, batch integer) TO diary_app;

CREATE OR REPLACE FUNCTION public.closed_diaries_backlog() RETURNS TABLE(closed bigint, overdue bigint)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    select count(*), count(*) filter (where d.purge_at <= now()) from diaries d where d.closed_at is not null
$$;

COMMENT ON FUNCTION public.closed_diaries_backlog() IS 'The closed-diary worker''s gauges: closed diaries kept, and those past their deletion date not deleted yet.';

REVOKE ALL ON FUNCTION public.closed_diaries_backlog() FROM PUBLIC;
GRANT ALL ON FUNCTION public.closed_diaries_backlog() TO diary_app;

-- Policies

DROP POLICY IF EXISTS former_members_delete ON public.former_members;
CREATE POLICY former_members_delete ON public.former_members FOR DELETE USING (false);

DROP POLICY IF EXISTS former_members_insert ON public.former_members;
CREATE POLICY former_members_insert ON public.former_members FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS former_members_select ON public.former_members;
CREATE POLICY former_members_select ON public.former_members FOR SELECT USING ((user_id = ( SELECT public.app_user_id() AS app_user_id)));

DROP POLICY IF EXISTS former_members_update ON public.former_members;
CREATE POLICY former_members_update ON public.former_members FOR UPDATE USING (false) WITH CHECK (false);
