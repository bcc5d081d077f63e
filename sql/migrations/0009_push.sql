-- Push notifications: devices, a transactional outbox, and daily reminders.
--
-- Outbox. A notification is a row, written in the transaction that causes it: the entry's
-- (trigger below) or the reminder scheduler's claim. A rolled-back entry leaves no row.
-- Each row is one request to APNs, for one device. Servers claim due rows with FOR UPDATE
-- SKIP LOCKED and lease them by moving available_at ahead; the lease is the only lock
-- held while the request is in flight, so no transaction stays open across the network
-- (an open transaction would hold back every reader of the change log). A server that dies
-- mid-batch leaves leased rows, which become due again when the lease ends: the only
-- duplicates are the rows that were in flight. Sent rows are deleted; a row that keeps
-- failing for 24 hours is marked dead with its last error.
--
-- The outbox and the devices are keyed by user and token, not by diary: they belong to a
-- person, and a reminder concerns no diary. Wake-up: NOTIFY push_outbox, with servers also
-- polling for rows whose backoff has ended.

create table devices (
    token text primary key check (token ~ '^[0-9a-f]{64,200}$'),
    user_id uuid not null references users (id) on delete cascade,
    environment text not null check (environment in ('sandbox', 'production')),
    created_at timestamptz not null default now(),
    -- The latest registration: the oldest of these is replaced at the 21st device.
    registered_at timestamptz not null default now()
);
create index devices_user on devices (user_id, registered_at);

create table push_outbox (
    id bigint generated always as identity primary key,
    -- The receiver, and the device as registered when the row was written: a token that
    -- has moved to another account since is not sent.
    user_id uuid not null,
    device_token text not null references devices (token) on delete cascade,
    kind text not null check (kind in ('entry', 'reminder')),
    diary_id uuid,
    entry_id uuid,
    payload jsonb not null,
    created_at timestamptz not null default clock_timestamp(),
    -- Due from then: the next attempt after a backoff, or the end of a lease.
    available_at timestamptz not null default '-infinity',
    attempts integer not null default 0,
    last_error text,
    dead_at timestamptz,
    check ((kind = 'entry') = (entry_id is not null and diary_id is not null))
);
create index push_outbox_due on push_outbox (available_at, id) where dead_at is null;
create index push_outbox_device on push_outbox (device_token);
create index push_outbox_dead on push_outbox (dead_at) where dead_at is not null;

-- One row per user whose reminder is on. next_at null: to be scheduled by the next tick,
-- which knows the time (the tests' clock, or the wall's).
create table reminder_schedule (
    user_id uuid primary key references users (id) on delete cascade,
    next_at timestamptz,
    -- The local day whose reminder was last handled (sent, or skipped as already written).
    last_handled_on date
);
create index reminder_schedule_due on reminder_schedule (next_at) where next_at is not null;
create index reminder_schedule_unscheduled on reminder_schedule (user_id) where next_at is null;

-- "Already written today" looks up a user's entries in one diary from a moment on.
create index entries_user_diary_created on entries (user_id, diary_id, created_at);
drop index entries_user_diary;

alter table devices enable row level security;
alter table devices force row level security;
create policy devices_select on devices for select using (user_id = (select app_user_id()));
create policy devices_insert on devices for insert with check (false);
create policy devices_update on devices for update using (false) with check (false);
create policy devices_delete on devices for delete using (user_id = (select app_user_id()));

alter table push_outbox enable row level security;
alter table push_outbox force row level security;
create policy push_outbox_select on push_outbox for select using (false);
create policy push_outbox_insert on push_outbox for insert with check (false);
create policy push_outbox_update on push_outbox for update using (false) with check (false);
create policy push_outbox_delete on push_outbox for delete using (false);

alter table reminder_schedule enable row level security;
alter table reminder_schedule force row level security;
create policy reminder_schedule_select on reminder_schedule for select using (false);
create policy reminder_schedule_insert on reminder_schedule for insert with check (false);
create policy reminder_schedule_update on reminder_schedule for update using (false) with check (false);
create policy reminder_schedule_delete on reminder_schedule for delete using (false);

-- Registers the caller's device. A token registered by someone else moves to the caller
-- (a phone signed into another account), with its unsent notifications dropped. At most
-- 20 devices: the one registered longest ago goes.
create function register_device(device_token text, device_environment text) returns void
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    caller uuid := app_user_id();
begin
    if caller is null then
        raise exception 'not signed in' using errcode = '42501';
    end if;
    -- Serialises one user's registrations, so the cap holds under concurrency.
    perform 1 from users where id = caller for update;
    delete from push_outbox o where o.device_token = register_device.device_token and o.user_id <> caller;
    insert into devices as d (token, user_id, environment)
    values (device_token, caller, device_environment)
    on conflict (token) do update set
        user_id = excluded.user_id,
        environment = excluded.environment,
        created_at = case when d.user_id = excluded.user_id then d.created_at else now() end,
        registered_at = now();
    delete from devices d where d.token in (
        select token from devices where user_id = caller order by registered_at desc, token offset 20);
end
$$;

-- The receiver's view of an author's name: an anonymous diary shows the alias label
-- (匿名N, numbered as member_profiles numbers them), never the name.
create function push_author_name(in_diary uuid, author uuid) returns text
language sql stable security definer
set search_path = pg_catalog, public
as $$
    select case when d.type = 'anonymous'
        then '匿名' || (select count(*) from diary_members o
                      where o.diary_id = m.diary_id and (o.joined_at, o.alias_id) <= (m.joined_at, m.alias_id))
        else u.display_name end
    from diaries d
    join diary_members m on m.diary_id = d.id and m.user_id = author
    join users u on u.id = author
    where d.id = in_diary
$$;

-- New entries: one row per other member's device, if they want new-entry notifications.
create function queue_entry_notifications() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    queued integer;
begin
    insert into push_outbox (user_id, device_token, kind, diary_id, entry_id, payload)
    select m.user_id, dv.token, 'entry', c.diary_id, c.id,
        jsonb_build_object(
            'aps', jsonb_build_object(
                'alert', jsonb_build_object('title', '新しい日記', 'body', author.name || 'さんが日記を書きました'),
                'sound', 'default',
                'thread-id', c.diary_id::text),
            'diaryId', c.diary_id::text,
            'entryId', c.id::text)
    from changed c
    cross join lateral (select push_author_name(c.diary_id, c.user_id) as name) author
    join diary_members m on m.diary_id = c.diary_id and m.user_id <> c.user_id
    join users u on u.id = m.user_id and coalesce((u.settings ->> 'notification_new_entry')::boolean, true)
    join devices dv on dv.user_id = m.user_id
    where author.name is not null
    order by c.created_at, c.id, m.user_id, dv.token;
    get diagnostics queued = row_count;
    if queued > 0 then
        perform pg_notify('push_outbox', '');
    end if;
    return null;
end
$$;

create trigger entries_queue_notifications after insert on entries
    referencing new table as changed
    for each statement execute function queue_entry_notifications();

-- Claims up to max_rows due notifications for `lease`. Rows that must not be sent any
-- more (the entry deleted, the receiver gone from the diary, the device moved) are
-- deleted instead of returned.
create function claim_push_batch(max_rows integer, lease interval)
returns table (id bigint, device_token text, environment text, payload jsonb, created_at timestamptz, attempts integer)
language sql security definer
set search_path = pg_catalog, public
as $$
    with due as (
        select o.id, o.user_id, o.device_token, o.kind, o.diary_id, o.entry_id from push_outbox o
        where o.dead_at is null and o.available_at <= now()
        order by o.available_at, o.id
        limit least(max_rows, 1000)
        for update skip locked
    ), checked as (
        select due.id,
            exists (select 1 from devices d where d.token = due.device_token and d.user_id = due.user_id)
            and (due.kind <> 'entry' or (
                exists (select 1 from entries e where e.diary_id = due.diary_id and e.id = due.entry_id)
                and exists (select 1 from diary_members m where m.diary_id = due.diary_id and m.user_id = due.user_id)
            )) as wanted
        from due
    ), dropped as (
        delete from push_outbox o using checked where o.id = checked.id and not checked.wanted
    ), claimed as (
        update push_outbox o set available_at = now() + lease, attempts = o.attempts + 1
        from checked where o.id = checked.id and checked.wanted
        returning o.id, o.device_token, o.payload, o.created_at, o.attempts
    )
    select c.id, c.device_token, d.environment, c.payload, c.created_at, c.attempts
    from claimed c join devices d on d.token = c.device_token
    order by c.id
$$;

-- What became of claimed rows, in one round trip. outcome: 'sent' (deleted), 'retry'
-- (due again after delay_ms; dead once the row is 24 hours old), 'hold' (due again after
-- delay_ms, never dead: our configuration is at fault, not the row), 'dead' (Apple refused
-- the notification itself: sending it again cannot help), 'unregistered' (the device is
-- removed, and with it every row for it).
create function finish_push_batch(ids bigint[], outcomes text[], delays_ms integer[], errors text[])
returns void
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    delete from push_outbox o using unnest(ids, outcomes) r(id, outcome)
    where o.id = r.id and r.outcome = 'sent';
    delete from devices d using push_outbox o, unnest(ids, outcomes) r(id, outcome)
    where o.id = r.id and r.outcome = 'unregistered' and d.token = o.device_token and d.user_id = o.user_id;
    delete from push_outbox o using unnest(ids, outcomes) r(id, outcome)
    where o.id = r.id and r.outcome = 'unregistered';
    update push_outbox o set
        available_at = now() + make_interval(secs => r.delay_ms / 1000.0),
        last_error = left(r.error, 500),
        dead_at = case when r.outcome = 'dead' or (r.outcome = 'retry' and o.created_at < now() - interval '24 hours') then now() end
    from unnest(ids, outcomes, delays_ms, errors) r(id, outcome, delay_ms, error)
    where o.id = r.id and r.outcome in ('retry', 'hold', 'dead');
end
$$;

-- For the gauges, and removes dead rows after 30 days.
create function push_outbox_counts() returns table (pending bigint, dead bigint)
language sql security definer
set search_path = pg_catalog, public
as $$
    with pruned as (delete from push_outbox where dead_at < now() - interval '30 days')
    select count(*) filter (where dead_at is null), count(*) filter (where dead_at is not null) from push_outbox
$$;

-- The instant of local time `at_time` on `day` in zone `zone`. A local time that the zone
-- skips that day (a daylight-saving jump) gives the first valid minute after it. Null for
-- a zone PostgreSQL does not know.
create function reminder_instant(zone text, at_time time, day date) returns timestamptz
language plpgsql stable
set search_path = pg_catalog, public
as $$
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

-- Keeps reminder_schedule in step with the settings: a row while the reminder is on,
-- rescheduled (next_at null) when its time or zone changes.
create function schedule_reminder() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    if not coalesce((new.settings ->> 'notification_reminder')::boolean, true) then
        delete from reminder_schedule where user_id = new.id;
    elsif tg_op = 'INSERT' then
        insert into reminder_schedule (user_id) values (new.id) on conflict (user_id) do nothing;
    elsif old.time_zone is distinct from new.time_zone
        or old.settings ->> 'reminder_time' is distinct from new.settings ->> 'reminder_time'
        or not coalesce((old.settings ->> 'notification_reminder')::boolean, true) then
        insert into reminder_schedule (user_id) values (new.id)
        on conflict (user_id) do update set next_at = null;
    end if;
    return null;
end
$$;

create trigger users_schedule_reminder after insert or update of settings, time_zone on users
    for each row execute function schedule_reminder();

insert into reminder_schedule (user_id)
select id from users where coalesce((settings ->> 'notification_reminder')::boolean, true);

-- One tick of the reminder clock at `now_at`, over up to max_rows users:
--   1. schedules users who have no next_at: today's reminder if it is still ahead and
--      today's was not handled, else tomorrow's;
--   2. handles users whose next_at has come. If today's reminder time has passed (a server
--      down at the time sends it late, once) it is sent, unless they have written today;
--      a day missed entirely is not sent. Then tomorrow's is scheduled.
-- Returns the users handled and what was done: 'sent', 'written', 'rescheduled'.
create function run_reminders(now_at timestamptz, max_rows integer)
returns table (user_id uuid, outcome text)
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    r record;
    today date;
    todays timestamptz;
    queued integer;
    sent_any boolean := false;
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
        update reminder_schedule s set next_at = case
            when todays is null then 'infinity'
            when todays > now_at and r.last_handled_on is distinct from today then todays
            else reminder_instant(r.time_zone, r.at_time, today + 1) end
        where s.user_id = r.user_id;
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
            update reminder_schedule s set next_at = case when todays > now_at and r.last_handled_on is distinct from today
                then todays else reminder_instant(r.time_zone, r.at_time, today + 1) end
            where s.user_id = r.user_id;
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
        update reminder_schedule s set last_handled_on = today,
            next_at = reminder_instant(r.time_zone, r.at_time, today + 1)
        where s.user_id = r.user_id;
        user_id := r.user_id;
        return next;
    end loop;
    if sent_any then
        perform pg_notify('push_outbox', '');
    end if;
end
$$;

revoke execute on function register_device(text, text), push_author_name(uuid, uuid), queue_entry_notifications(),
    claim_push_batch(integer, interval), finish_push_batch(bigint[], text[], integer[], text[]), push_outbox_counts(),
    reminder_instant(text, time, date), schedule_reminder(), run_reminders(timestamptz, integer) from public;
grant select, delete on devices to diary_app;
grant execute on function register_device(text, text), claim_push_batch(integer, interval),
    finish_push_batch(bigint[], text[], integer[], text[]), push_outbox_counts(), run_reminders(timestamptz, integer) to diary_app;
