-- Premium plans, kept true by RevenueCat's webhooks, and the free plan's limits.
--
-- A user's own plan is premium_expires_at ('infinity' for a lifetime purchase), with the
-- product that set it, and whether that product is the couple plan. The couple plan also
-- makes the purchaser's partner premium: the other member of a couple diary they share,
-- for as long as both stay in it. That grant is not stored: user_plan() reads it from the
-- memberships, so it ends the moment either leaves.
--
-- Every webhook event is recorded once (billing_events, keyed by RevenueCat's event id: a
-- repeat changes nothing), with what it did: the audit trail for support questions. An
-- event for a user we do not know yet waits, and is applied if that user appears within 7
-- days. An event older than the last one applied to its user is recorded and ignored.

alter table users
    add column premium_product_id text,
    add column premium_couple boolean not null default false,
    add column premium_event_at timestamptz;

create table billing_events (
    event_id text primary key check (char_length(event_id) between 1 and 200),
    event_type text not null check (char_length(event_type) between 1 and 100),
    -- The ids the event names its user by (app_user_id, original_app_user_id, aliases), and
    -- for a TRANSFER the two sides: ours are user ids, anything else is ignored.
    user_ids text[] not null default '{}',
    transferred_from text[] not null default '{}',
    transferred_to text[] not null default '{}',
    product_id text,
    couple boolean not null default false,
    expiration_at timestamptz,
    event_at timestamptz not null,
    environment text not null,
    received_at timestamptz not null default now(),
    -- applied, older (than the last applied to the user), ignored (a type that changes
    -- nothing), sandbox (not accepted here), unknown_user (waiting for the user, 7 days).
    outcome text not null check (outcome in ('applied', 'older', 'ignored', 'sandbox', 'unknown_user')),
    -- Whom it was applied to; for a TRANSFER, the receiver.
    user_id uuid,
    applied_at timestamptz,
    body jsonb not null
);
create index billing_events_user on billing_events (user_id, event_at) where user_id is not null;
create index billing_events_waiting on billing_events (received_at) where outcome = 'unknown_user';

alter table billing_events enable row level security;
alter table billing_events force row level security;
create policy billing_events_select on billing_events for select using (false);
create policy billing_events_insert on billing_events for insert with check (false);
create policy billing_events_update on billing_events for update using (false) with check (false);
create policy billing_events_delete on billing_events for delete using (false);

-- free, premium (the user's own plan) or couple (their own couple plan, or a partner's).
create function user_plan(user_id uuid) returns text
language sql stable security definer
set search_path = pg_catalog, public
as $$
    select case
        when u.premium_expires_at > now() then case when u.premium_couple then 'couple' else 'premium' end
        when exists (
            select 1 from diary_members me
            join diaries d on d.id = me.diary_id and d.type = 'couple'
            join diary_members partner on partner.diary_id = me.diary_id and partner.user_id <> me.user_id
            join users p on p.id = partner.user_id
            where me.user_id = u.id and p.premium_couple and p.premium_expires_at > now()
        ) then 'couple'
        else 'free'
    end
    from users u where u.id = user_plan.user_id
$$;
revoke execute on function user_plan(uuid) from public;
grant execute on function user_plan(uuid) to diary_app;

-- The first of `ids` that is one of our users.
create function billing_user(ids text[]) returns uuid
language sql stable
set search_path = pg_catalog, public
as $$
    select u.id from unnest(ids) with ordinality as candidate (text, position)
    join users u on u.id = case when candidate.text ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then candidate.text::uuid end
    order by candidate.position limit 1
$$;
revoke execute on function billing_user(text[]) from public;

-- Applies a recorded event (one waiting for its user, or just received) and records the outcome.
create function apply_billing_event(id text) returns text
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    e billing_events;
    target uuid;
    source uuid;
    result text;
begin
    select * into e from billing_events where event_id = id for update;
    if e.event_type = 'TRANSFER' then
        target := billing_user(e.transferred_to);
        source := billing_user(e.transferred_from);
    elsif e.event_type in ('INITIAL_PURCHASE', 'RENEWAL', 'UNCANCELLATION', 'PRODUCT_CHANGE', 'NON_RENEWING_PURCHASE',
                           'SUBSCRIPTION_EXTENDED', 'CANCELLATION', 'EXPIRATION') then
        target := billing_user(e.user_ids);
    else
        update billing_events set outcome = 'ignored' where event_id = id;
        return 'ignored';
    end if;
    if target is null then
        update billing_events set outcome = 'unknown_user' where event_id = id;
        return 'unknown_user';
    end if;
    -- One user's events apply in their own order, whatever order they arrive in.
    perform 1 from users u where u.id in (target, source) order by u.id for update;
    if exists (select 1 from users u where u.id in (target, source) and u.premium_event_at > e.event_at) then
        update billing_events set outcome = 'older', user_id = target where event_id = id;
        return 'older';
    end if;
    if e.event_type = 'TRANSFER' then
        update users u set premium_expires_at = s.premium_expires_at, premium_product_id = s.premium_product_id,
            premium_couple = s.premium_couple, premium_event_at = e.event_at
        from users s where u.id = target and s.id = source;
        update users u set premium_expires_at = null, premium_product_id = null, premium_couple = false, premium_event_at = e.event_at
        where u.id = source and source <> target;
        -- A receiver we know, from a giver we do not: the entitlement is theirs from now.
        update users u set premium_event_at = e.event_at where u.id = target and source is null;
    elsif e.event_type = 'EXPIRATION' then
        update users u set premium_expires_at = least(coalesce(e.expiration_at, now()), now()), premium_event_at = e.event_at
        where u.id = target;
    elsif e.event_type = 'CANCELLATION' then
        -- Access lasts until the period ends.
        update users u set premium_expires_at = coalesce(e.expiration_at, u.premium_expires_at), premium_event_at = e.event_at
        where u.id = target;
    else
        update users u set premium_expires_at = coalesce(e.expiration_at, 'infinity'), premium_product_id = e.product_id,
            premium_couple = e.couple, premium_event_at = e.event_at
        where u.id = target;
    end if;
    update billing_events set outcome = 'applied', user_id = target, applied_at = now() where event_id = id;
    return 'applied';
end
$$;
revoke execute on function apply_billing_event(text) from public;

-- Records a webhook event once and applies it; a repeated id is 'duplicate' and changes
-- nothing. `accepted` false (a sandbox event where those are not accepted) records it only.
create function record_billing_event(
    id text, type text, user_ids text[], transferred_from text[], transferred_to text[], product_id text, couple boolean,
    expiration_at timestamptz, event_at timestamptz, environment text, accepted boolean, body jsonb
) returns text
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    insert into billing_events (event_id, event_type, user_ids, transferred_from, transferred_to, product_id, couple,
                                expiration_at, event_at, environment, outcome, body)
    values (id, type, user_ids, transferred_from, transferred_to, product_id, couple,
            expiration_at, event_at, environment, case when accepted then 'ignored' else 'sandbox' end, body)
    on conflict (event_id) do nothing;
    if not found then
        return 'duplicate';
    end if;
    if not accepted then
        return 'sandbox';
    end if;
    return apply_billing_event(id);
end
$$;
revoke execute on function record_billing_event(text, text, text[], text[], text[], text, boolean, timestamptz, timestamptz, text, boolean, jsonb) from public;
grant execute on function record_billing_event(text, text, text[], text[], text[], text, boolean, timestamptz, timestamptz, text, boolean, jsonb) to diary_app;

-- A user who appears within 7 days of events that named them gets those events, in order.
create function apply_waiting_billing_events() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    waiting text;
begin
    for waiting in
        select b.event_id from billing_events b
        where b.outcome = 'unknown_user' and b.received_at > now() - interval '7 days'
          and exists (select 1 from unnest(b.user_ids || b.transferred_to) named (id) where lower(named.id) = new.id::text)
        order by b.event_at, b.event_id
    loop
        perform apply_billing_event(waiting);
    end loop;
    return null;
end
$$;
revoke execute on function apply_waiting_billing_events() from public;
create trigger users_apply_waiting_billing_events after insert on users
    for each row execute function apply_waiting_billing_events();

-- A free user owns at most `free_limit` diaries; joining is never limited. The user's row
-- is locked first, so concurrent creates count one after another.
drop function create_diary(uuid, text, text);
create function create_diary(diary uuid, name text, type text, free_limit integer) returns void
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := (select app_user_id());
begin
    if caller is null then
        raise exception 'no caller' using errcode = 'ZN401';
    end if;
    perform 1 from users u where u.id = caller for update;
    if user_plan(caller) = 'free'
       and (select count(*) from diary_members m where m.user_id = caller and m.role = 'owner') >= free_limit then
        raise exception 'the free plan owns % diaries', free_limit using errcode = 'ZN006';
    end if;
    insert into diaries (id, name, type, created_by) values (diary, create_diary.name, create_diary.type, caller);
    insert into diary_members (diary_id, user_id, role) values (diary, caller, 'owner');
end
$$;
revoke execute on function create_diary(uuid, text, text, integer) from public;
grant execute on function create_diary(uuid, text, text, integer) to diary_app;

-- Photos an entry may carry on the caller's plan, couple grants included.
create or replace function photos_per_entry(user_id uuid) returns integer
language sql stable security definer
set search_path = pg_catalog, public
as $$ select case when user_plan(photos_per_entry.user_id) = 'free' then 1 else 4 end $$;
