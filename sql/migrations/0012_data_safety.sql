-- Data safety: the exports' daily limit, the backups' record, and the service's notices.

-- Exports a user started, per UTC day (diary and personal exports together).
create table export_days (
    user_id uuid not null references users (id) on delete cascade,
    day date not null,
    exports integer not null check (exports > 0),
    primary key (user_id, day)
);

-- One row per backup `diary-server backup` finished, with what it recorded from its
-- snapshot; `verify-backup` fills in the verification. Read by GET /v1/data-safety.
create table backup_runs (
    id bigint generated always as identity primary key,
    started_at timestamptz not null,
    finished_at timestamptz not null,
    location text not null,
    entry_count bigint not null,
    entries_checksum text not null,
    verified_at timestamptz,
    verified boolean
);
create index backup_runs_latest on backup_runs (finished_at desc);

-- Notices for the apps (GET /v1/service-status). A shutdown is announced at least 183 days
-- before it takes effect: the six months' notice the app promises, held by the schema.
create table service_notices (
    id uuid primary key default gen_random_uuid(),
    kind text not null check (kind in ('info', 'shutdown')),
    title text not null check (length(title) between 1 and 200),
    body text not null check (length(body) between 1 and 5000),
    published_at timestamptz not null default now(),
    effective_on date,
    constraint service_notices_shutdown_six_months_ahead check (
        kind <> 'shutdown' or (effective_on is not null and effective_on >= (published_at at time zone 'UTC')::date + 183))
);
create index service_notices_published on service_notices (published_at desc);

alter table export_days enable row level security;
alter table export_days force row level security;
create policy export_days_select on export_days for select using (user_id = (select app_user_id()));
create policy export_days_insert on export_days for insert with check (false);
create policy export_days_update on export_days for update using (false) with check (false);
create policy export_days_delete on export_days for delete using (false);

-- Not tenant data: the service's own record, the same for every reader.
alter table backup_runs enable row level security;
alter table backup_runs force row level security;
create policy backup_runs_select on backup_runs for select using (true);
create policy backup_runs_insert on backup_runs for insert with check (false);
create policy backup_runs_update on backup_runs for update using (false) with check (false);
create policy backup_runs_delete on backup_runs for delete using (false);

alter table service_notices enable row level security;
alter table service_notices force row level security;
create policy service_notices_select on service_notices for select using (true);
create policy service_notices_insert on service_notices for insert with check (false);
create policy service_notices_update on service_notices for update using (false) with check (false);
create policy service_notices_delete on service_notices for delete using (false);

grant select on export_days, backup_runs, service_notices to diary_app;

-- Counts the caller's export unless the day's limit is reached: then false.
create function record_export(daily_limit integer) returns boolean
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := app_user_id();
begin
    if caller is null then
        raise exception 'not signed in' using errcode = 'ZN401';
    end if;
    delete from export_days d where d.user_id = caller and d.day < (now() at time zone 'UTC')::date - 2;
    insert into export_days as d (user_id, day, exports)
    values (caller, (now() at time zone 'UTC')::date, 1)
    on conflict (user_id, day) do update set exports = d.exports + 1 where d.exports < daily_limit;
    return found;
end
$$;
revoke execute on function record_export(integer) from public;
grant execute on function record_export(integer) to diary_app;

-- The caller's purchase events, for their personal export (APPI disclosure). The table
-- itself is readable by nobody: an event may name several users.
create function my_billing_events()
returns table (event_id text, event_type text, product_id text, expiration_at timestamptz, event_at timestamptz, received_at timestamptz, outcome text)
language sql stable security definer
set search_path = pg_catalog, public
as $$
    select b.event_id, b.event_type, b.product_id, b.expiration_at, b.event_at, b.received_at, b.outcome
    from billing_events b
    where app_user_id() is not null
      and (app_user_id()::text = any (b.user_ids) or app_user_id()::text = any (b.transferred_from) or app_user_id()::text = any (b.transferred_to))
    order by b.event_at, b.event_id
$$;
revoke execute on function my_billing_events() from public;
grant execute on function my_billing_events() to diary_app;
