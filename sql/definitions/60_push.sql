-- Definitions: push. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.claim_push_batch(max_rows integer, lease interval) RETURNS TABLE(id bigint, device_token text, environment text, payload jsonb, created_at timestamp with time zone, attempts integer)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
-- PL/pgSQL, and a statement for each table: Citus plans neither a SQL function's statement with
-- its parameters in it, nor a statement that joins the outbox, on the coordinator, to the
-- entries and members of diaries on other nodes. Each diary table is read by the diaries'
-- values, so that it routes to their shards.
declare
    due_ids bigint[];
    due_users uuid[];
    due_tokens text[];
    due_kinds text[];
    due_diaries uuid[];
    due_entries uuid[];
    live_entries uuid[];
    members text[];
    ended text[];
    ended_sessions uuid[];
    wanted bigint[];
    claimed_until constant timestamptz := now() + lease;
begin
    select array_agg(o.id order by o.available_at, o.id), array_agg(o.user_id order by o.available_at, o.id),
        array_agg(o.device_token order by o.available_at, o.id), array_agg(o.kind order by o.available_at, o.id),
        array_agg(o.diary_id order by o.available_at, o.id), array_agg(o.entry_id order by o.available_at, o.id)
    into due_ids, due_users, due_tokens, due_kinds, due_diaries, due_entries
    from (
        select o.id, o.user_id, o.device_token, o.kind, o.diary_id, o.entry_id, o.available_at from push_outbox o
        where o.dead_at is null and o.available_at <= now()
        order by o.available_at, o.id
        limit least(max_rows, 1000)
        for update skip locked
    ) o;
    if due_ids is null then
        return;
    end if;
    select coalesce(array_agg(e.id), '{}') into live_entries from entries e
    where e.diary_id = any (due_diaries) and e.id = any (due_entries);
    select coalesce(array_agg(m.diary_id::text || ' ' || m.user_id::text), '{}') into members from diary_members m
    where m.diary_id = any (due_diaries) and m.user_id = any (due_users);
    -- Devices whose session has ended (signed out, revoked, its refresh token expired) get
    -- nothing more, and are forgotten: each only while still bound to the session found
    -- ended, so a device a new session registered again meanwhile stays.
    select coalesce(array_agg(v.token), '{}'), coalesce(array_agg(v.session_id), '{}') into ended, ended_sessions from devices v
    where v.token = any (due_tokens) and v.session_id is not null and not exists (
        select 1 from sessions s where s.id = v.session_id and s.revoked_at is null
        and exists (select 1 from refresh_tokens t where t.session_id = s.id and t.expires_at > now()));
    if cardinality(ended) > 0 then
        delete from devices v where v.token = any (ended) and v.session_id = any (ended_sessions);
    end if;
    select coalesce(array_agg(d.id), '{}') into wanted
    from unnest(due_ids, due_users, due_tokens, due_kinds, due_diaries, due_entries) d(id, user_id, token, kind, diary_id, entry_id)
    where exists (select 1 from devices v where v.token = d.token and v.user_id = d.user_id)
      and (d.kind <> 'entry' or (d.entry_id = any (live_entries) and d.diary_id::text || ' ' || d.user_id::text = any (members)));
    delete from push_outbox o where o.id = any (due_ids) and not o.id = any (wanted);
    update push_outbox o set available_at = claimed_until, attempts = o.attempts + 1 where o.id = any (wanted);
    return query
    select o.id, o.device_token, v.environment, o.payload, o.created_at, o.attempts
    from push_outbox o join devices v on v.token = o.device_token
    where o.id = any (wanted)
    order by o.id;
end
$$;

COMMENT ON FUNCTION public.claim_push_batch(max_rows integer, lease interval) IS 'Claims up to max_rows due notifications (SKIP LOCKED) and leases them for lease, so that no transaction stays open while APNs is called. Rows that must not be sent any more (the entry deleted, the receiver gone from the diary, the device moved, or its session ended: that device is forgotten too) are deleted instead of returned.';

REVOKE ALL ON FUNCTION public.claim_push_batch(max_rows integer, lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.claim_push_batch(max_rows integer, lease interval) TO diary_app;

CREATE OR REPLACE FUNCTION public.finish_push_batch(ids bigint[], outcomes text[], delays_ms integer[], errors text[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    -- Worked out here and bound as values: Citus refuses a function that is not IMMUTABLE
    -- inside a CASE of an UPDATE of one of its tables, and a STABLE one (timestamptz + interval)
    -- called with a column.
    settled constant timestamptz := now();
    stale_before constant timestamptz := settled - interval '24 hours';
    due_again constant timestamptz[] := array(
        select settled + make_interval(secs => d.delay_ms / 1000.0) from unnest(delays_ms) with ordinality d(delay_ms, n) order by d.n);
begin
    delete from push_outbox o using unnest(ids, outcomes) r(id, outcome)
    where o.id = r.id and r.outcome = 'sent';
    delete from devices d using push_outbox o, unnest(ids, outcomes) r(id, outcome)
    where o.id = r.id and r.outcome = 'unregistered' and d.token = o.device_token and d.user_id = o.user_id;
    delete from push_outbox o using unnest(ids, outcomes) r(id, outcome)
    where o.id = r.id and r.outcome = 'unregistered';
    update push_outbox o set
        available_at = r.due_at,
        last_error = left(r.error, 500),
        dead_at = case when r.outcome = 'dead' or (r.outcome = 'retry' and o.created_at < stale_before) then settled end
    from unnest(ids, outcomes, due_again, errors) r(id, outcome, due_at, error)
    where o.id = r.id and r.outcome in ('retry', 'hold', 'dead');
end
$$;

COMMENT ON FUNCTION public.finish_push_batch(ids bigint[], outcomes text[], delays_ms integer[], errors text[]) IS 'Settles claimed notifications in one round trip: sent (deleted), retry (due again after delay_ms, dead once 24 hours old), hold (due again, never dead: the configuration is at fault), dead (Apple refused the notification itself), unregistered (the device and every row for it removed).';

REVOKE ALL ON FUNCTION public.finish_push_batch(ids bigint[], outcomes text[], delays_ms integer[], errors text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.finish_push_batch(ids bigint[], outcomes text[], delays_ms integer[], errors text[]) TO diary_app;

CREATE OR REPLACE FUNCTION public.push_author_name(in_diary uuid, author uuid) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    diary_type text;
    joined timestamptz;
    alias uuid;
begin
    select d.type, m.joined_at, m.alias_id into diary_type, joined, alias
    from diaries d join diary_members m on m.diary_id = d.id and m.user_id = author
    where d.id = in_diary;
    if not found then
        return null;
    end if;
    if diary_type = 'anonymous' then
        return '匿名' || (select count(*) from diary_members o
                         where o.diary_id = in_diary and (o.joined_at, o.alias_id) <= (joined, alias));
    end if;
    return (select u.display_name from users u where u.id = author);
end
$$;

COMMENT ON FUNCTION public.push_author_name(in_diary uuid, author uuid) IS 'An author''s name as a notification shows it: in an anonymous diary the alias label (匿名N, numbered as member_profiles numbers them), never the name. Null when the author is not a member.';

REVOKE ALL ON FUNCTION public.push_author_name(in_diary uuid, author uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.push_outbox_counts() RETURNS TABLE(pending bigint, dead bigint)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    with pruned as (delete from push_outbox where dead_at < now() - interval '30 days')
    select count(*) filter (where dead_at is null), count(*) filter (where dead_at is not null) from push_outbox
$$;

COMMENT ON FUNCTION public.push_outbox_counts() IS 'Pending and dead notifications, for the gauges; also deletes dead rows older than 30 days.';

REVOKE ALL ON FUNCTION public.push_outbox_counts() FROM PUBLIC;
GRANT ALL ON FUNCTION public.push_outbox_counts() TO diary_app;

CREATE OR REPLACE FUNCTION public.register_device(device_token text, device_environment text, session uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller uuid := app_user_id();
    -- Bound as a value: Citus refuses a function that is not IMMUTABLE in DO UPDATE SET.
    registered timestamptz := now();
begin
    if caller is null or (session is not null and not exists (
        select 1 from sessions s where s.id = session and s.user_id = caller and s.revoked_at is null)) then
        raise exception 'not signed in' using errcode = '42501';
    end if;
    -- Serialises one user's registrations, so the cap holds under concurrency.
    perform 1 from users where id = caller for update;
    delete from push_outbox o where o.device_token = register_device.device_token and o.user_id <> caller;
    insert into devices as d (token, user_id, environment, session_id)
    values (device_token, caller, device_environment, session)
    on conflict (token) do update set
        user_id = excluded.user_id,
        environment = excluded.environment,
        session_id = excluded.session_id,
        created_at = case when d.user_id = excluded.user_id then d.created_at else registered end,
        registered_at = registered;
    delete from devices d where d.token in (
        select token from devices where user_id = caller order by registered_at desc, token offset 20);
end
$$;

COMMENT ON FUNCTION public.register_device(device_token text, device_environment text, session uuid) IS 'register_device, bound to the caller''s live session that registers it: once that session ends, the device gets no more pushes (claim_push_batch).';

REVOKE ALL ON FUNCTION public.register_device(device_token text, device_environment text, session uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.register_device(device_token text, device_environment text, session uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.reminder_instant(zone text, at_time time without time zone, day date) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    wanted timestamp;
    candidate timestamptz;
begin
    for minutes in 0..240 loop
        wanted := day + at_time + make_interval(mins => minutes);
        candidate := wanted at time zone zone;
        if (candidate at time zone zone) = wanted then
            return candidate;
        end if;
    end loop;
    return (day + at_time) at time zone zone;
exception when invalid_parameter_value then
    return null;
end
$$;

COMMENT ON FUNCTION public.reminder_instant(zone text, at_time time without time zone, day date) IS 'The instant of local time at_time on day in zone; a time the zone skips that day (a daylight-saving jump) gives the first valid minute after it. Null for a zone PostgreSQL does not know.';

REVOKE ALL ON FUNCTION public.reminder_instant(zone text, at_time time without time zone, day date) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.reschedule_reminder(account uuid, old_settings jsonb, old_zone text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    settings jsonb;
    zone text;
begin
    select u.settings, u.time_zone into settings, zone from users u where u.id = account;
    if not coalesce((settings ->> 'notification_reminder')::boolean, true) then
        delete from reminder_schedule r where r.user_id = account;
    elsif old_settings is null then
        insert into reminder_schedule (user_id) values (account) on conflict (user_id) do nothing;
    elsif old_zone is distinct from zone
        or old_settings ->> 'reminder_time' is distinct from settings ->> 'reminder_time'
        or not coalesce((old_settings ->> 'notification_reminder')::boolean, true) then
        insert into reminder_schedule (user_id) values (account)
        on conflict (user_id) do update set next_at = null;
    end if;
end
$$;

COMMENT ON FUNCTION public.reschedule_reminder(account uuid, old_settings jsonb, old_zone text) IS 'Keeps reminder_schedule in step with an account''s settings: off deletes it; a new account, a change of time or zone, or turning it on schedules it.';

REVOKE ALL ON FUNCTION public.reschedule_reminder(account uuid, old_settings jsonb, old_zone text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.run_reminders(now_at timestamp with time zone, max_rows integer) RETURNS TABLE(user_id uuid, outcome text)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    r record;
    today date;
    todays timestamptz;
    queued integer;
    sent_any boolean := false;
    -- Each new next_at is worked out here and bound as a value: Citus refuses a function that
    -- is not IMMUTABLE inside a CASE of an UPDATE of one of its tables.
    next_due timestamptz;
begin
    for r in
        select s.user_id, s.last_handled_on, u.time_zone, (u.settings ->> 'reminder_time')::time as at_time
        from reminder_schedule s join users u on u.id = s.user_id
        where s.next_at is null
        limit max_rows
        for update of s skip locked
    loop
        today := (now_at at time zone r.time_zone)::date;
        todays := reminder_instant(r.time_zone, r.at_time, today);
        next_due := case
            when todays is null then 'infinity'
            when todays > now_at and r.last_handled_on is distinct from today then todays
            else reminder_instant(r.time_zone, r.at_time, today + 1) end;
        update reminder_schedule s set next_at = next_due where s.user_id = r.user_id;
    end loop;

    for r in
        select s.user_id, s.next_at, s.last_handled_on, u.time_zone, (u.settings ->> 'reminder_time')::time as at_time
        from reminder_schedule s join users u on u.id = s.user_id
        where s.next_at <= now_at
        order by s.next_at
        limit max_rows
        for update of s skip locked
    loop
        today := (now_at at time zone r.time_zone)::date;
        todays := reminder_instant(r.time_zone, r.at_time, today);
        if todays is null then
            update reminder_schedule s set next_at = 'infinity' where s.user_id = r.user_id;
            continue;
        end if;
        if todays > now_at or r.last_handled_on is not distinct from today then
            -- A day missed entirely, or already handled: wait for the next one.
            next_due := case when todays > now_at and r.last_handled_on is distinct from today
                then todays else reminder_instant(r.time_zone, r.at_time, today + 1) end;
            update reminder_schedule s set next_at = next_due where s.user_id = r.user_id;
            user_id := r.user_id; outcome := 'rescheduled';
            return next;
            continue;
        end if;
        if exists (
            select 1 from diary_members m
            join entries e on e.user_id = m.user_id and e.diary_id = m.diary_id
            where m.user_id = r.user_id
              and e.created_at >= (today::timestamp at time zone r.time_zone) and e.created_at <= now_at
        ) then
            outcome := 'written';
        else
            insert into push_outbox (user_id, device_token, kind, payload)
            select r.user_id, d.token, 'reminder',
                '{"aps": {"alert": {"title": "ずっと日記", "body": "今日の日記を書きましょう"}, "sound": "default"}}'::jsonb
            from devices d where d.user_id = r.user_id
            order by d.token;
            get diagnostics queued = row_count;
            sent_any := sent_any or queued > 0;
            outcome := 'sent';
        end if;
        next_due := reminder_instant(r.time_zone, r.at_time, today + 1);
        update reminder_schedule s set last_handled_on = today, next_at = next_due where s.user_id = r.user_id;
        user_id := r.user_id;
        return next;
    end loop;
    if sent_any then
        perform pg_notify('push_outbox', '');
    end if;
end
$$;

COMMENT ON FUNCTION public.run_reminders(now_at timestamp with time zone, max_rows integer) IS 'One tick of the reminder clock at now_at over up to max_rows users: schedules those without next_at, then handles those due, queuing the reminder unless they have written today (late, once, after a server was down; never for a day missed entirely) and scheduling tomorrow''s. Returns each user handled with sent, written or rescheduled.';

REVOKE ALL ON FUNCTION public.run_reminders(now_at timestamp with time zone, max_rows integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.run_reminders(now_at timestamp with time zone, max_rows integer) TO diary_app;

-- Policies

DROP POLICY IF EXISTS devices_delete ON public.devices;
CREATE POLICY devices_delete ON public.devices FOR DELETE USING ((user_id = ( SELECT public.app_user_id() AS app_user_id)));

DROP POLICY IF EXISTS devices_insert ON public.devices;
CREATE POLICY devices_insert ON public.devices FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS devices_select ON public.devices;
CREATE POLICY devices_select ON public.devices FOR SELECT USING ((user_id = ( SELECT public.app_user_id() AS app_user_id)));

DROP POLICY IF EXISTS devices_update ON public.devices;
CREATE POLICY devices_update ON public.devices FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS push_outbox_delete ON public.push_outbox;
CREATE POLICY push_outbox_delete ON public.push_outbox FOR DELETE USING (false);

DROP POLICY IF EXISTS push_outbox_insert ON public.push_outbox;
CREATE POLICY push_outbox_insert ON public.push_outbox FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS push_outbox_select ON public.push_outbox;
CREATE POLICY push_outbox_select ON public.push_outbox FOR SELECT USING (false);

DROP POLICY IF EXISTS push_outbox_update ON public.push_outbox;
CREATE POLICY push_outbox_update ON public.push_outbox FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS reminder_schedule_delete ON public.reminder_schedule;
CREATE POLICY reminder_schedule_delete ON public.reminder_schedule FOR DELETE USING (false);

DROP POLICY IF EXISTS reminder_schedule_insert ON public.reminder_schedule;
CREATE POLICY reminder_schedule_insert ON public.reminder_schedule FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS reminder_schedule_select ON public.reminder_schedule;
CREATE POLICY reminder_schedule_select ON public.reminder_schedule FOR SELECT USING (false);

DROP POLICY IF EXISTS reminder_schedule_update ON public.reminder_schedule;
CREATE POLICY reminder_schedule_update ON public.reminder_schedule FOR UPDATE USING (false) WITH CHECK (false);
