-- Sign in with Apple's account lifecycle: the Apple refresh token kept only to revoke it,
-- the revocations owed to Apple once an account is deleted, and Apple's notifications.

-- An account's Apple refresh token, sealed by the server (AES-GCM under
-- DIARY_SECRETS_KEY_FILE, bound to token_id): the database never holds it in clear.
create table apple_tokens (
    user_id uuid primary key references users (id) on delete cascade,
    token_id uuid not null unique,
    client_id text not null check (char_length(client_id) between 1 and 255),
    sealed bytea not null check (octet_length(sealed) between 29 and 4096),
    stored_at timestamptz not null default now()
);

-- Revocations owed to Apple. A row is queued by the transaction that deletes the account,
-- so neither a crash nor Apple being down loses one; it is tried with backoff for 7 days,
-- then recorded as failed. The sealed token goes once the row is finished either way.
create table apple_revocations (
    token_id uuid primary key,
    client_id text not null,
    sealed bytea,
    queued_at timestamptz not null default now(),
    available_at timestamptz not null default now(),
    attempts integer not null default 0,
    state text not null default 'pending' check (state in ('pending', 'revoked', 'failed')),
    last_error text,
    finished_at timestamptz,
    constraint apple_revocations_sealed_while_pending check ((state = 'pending') = (sealed is not null))
);
create index apple_revocations_due on apple_revocations (available_at) where state = 'pending';

-- Apple's server-to-server notifications already handled, by the token's jti: a repeat
-- is answered without being applied again.
create table apple_notifications (
    jti text primary key check (char_length(jti) between 1 and 255),
    type text not null check (char_length(type) <= 64),
    outcome text not null,
    received_at timestamptz not null default now()
);

-- Server-side state only: the app role reaches it through the functions below.
alter table apple_tokens enable row level security;
alter table apple_tokens force row level security;
create policy apple_tokens_select on apple_tokens for select using (false);
create policy apple_tokens_insert on apple_tokens for insert with check (false);
create policy apple_tokens_update on apple_tokens for update using (false) with check (false);
create policy apple_tokens_delete on apple_tokens for delete using (false);

alter table apple_revocations enable row level security;
alter table apple_revocations force row level security;
create policy apple_revocations_select on apple_revocations for select using (false);
create policy apple_revocations_insert on apple_revocations for insert with check (false);
create policy apple_revocations_update on apple_revocations for update using (false) with check (false);
create policy apple_revocations_delete on apple_revocations for delete using (false);

alter table apple_notifications enable row level security;
alter table apple_notifications force row level security;
create policy apple_notifications_select on apple_notifications for select using (false);
create policy apple_notifications_insert on apple_notifications for insert with check (false);
create policy apple_notifications_update on apple_notifications for update using (false) with check (false);
create policy apple_notifications_delete on apple_notifications for delete using (false);

-- Keeps the caller's newest Apple refresh token (sealed), replacing any earlier one.
create function store_apple_token(token uuid, client text, sealed_token bytea) returns void
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := app_user_id();
begin
    if caller is null then
        raise exception 'not signed in' using errcode = 'ZN401';
    end if;
    insert into apple_tokens as t (user_id, token_id, client_id, sealed)
    values (caller, token, client, sealed_token)
    on conflict (user_id) do update
    set token_id = excluded.token_id, client_id = excluded.client_id, sealed = excluded.sealed, stored_at = now();
end
$$;

-- However an account is deleted (DELETE /v1/me, Apple's account-delete), its Apple token
-- moves to the revocation queue in the same transaction.
create function queue_apple_revocation() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    insert into apple_revocations (token_id, client_id, sealed)
    select t.token_id, t.client_id, t.sealed from apple_tokens t where t.user_id = old.id
    on conflict (token_id) do nothing;
    if found then
        perform pg_notify('apple_revocations', '');
    end if;
    return old;
end
$$;

create trigger users_queue_apple_revocation before delete on users
    for each row execute function queue_apple_revocation();

-- Leases up to max_rows due revocations, so that one server at a time tries each.
create function claim_apple_revocations(max_rows integer, lease interval)
returns table (token_id uuid, client_id text, sealed bytea, attempts integer, queued_at timestamptz)
language sql security definer
set search_path = pg_catalog, public
as $$
    with due as (
        select r.token_id from apple_revocations r
        where r.state = 'pending' and r.available_at <= now()
        order by r.available_at, r.token_id
        limit least(max_rows, 100)
        for update skip locked
    )
    update apple_revocations r set available_at = now() + lease, attempts = r.attempts + 1
    from due where r.token_id = due.token_id
    returning r.token_id, r.client_id, r.sealed, r.attempts, r.queued_at
$$;

-- Settles one claimed revocation: 'revoked' finishes it; 'failed' records that Apple
-- refuses it for good; 'retry' makes it due again after delay_ms, or failed once it was
-- queued more than 7 days ago. Returns the row's state.
create function finish_apple_revocation(token uuid, outcome text, delay_ms integer, error text) returns text
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    result text;
begin
    if outcome = 'revoked' then
        update apple_revocations r set state = 'revoked', sealed = null, finished_at = now(), last_error = null
        where r.token_id = token and r.state = 'pending'
        returning r.state into result;
    elsif outcome = 'failed' then
        update apple_revocations r set state = 'failed', sealed = null, finished_at = now(), last_error = left(error, 500)
        where r.token_id = token and r.state = 'pending'
        returning r.state into result;
    elsif outcome = 'retry' then
        update apple_revocations r set
            last_error = left(error, 500),
            available_at = now() + make_interval(secs => delay_ms / 1000.0),
            state = case when r.queued_at < now() - interval '7 days' then 'failed' else 'pending' end,
            sealed = case when r.queued_at < now() - interval '7 days' then null else r.sealed end,
            finished_at = case when r.queued_at < now() - interval '7 days' then now() end
        where r.token_id = token and r.state = 'pending'
        returning r.state into result;
    else
        raise exception 'unknown outcome %', outcome using errcode = '22023';
    end if;
    return result;
end
$$;

-- For the gauges; finished rows are kept 90 days, as the record of what became of them.
create function apple_revocation_counts() returns table (pending bigint, failed bigint)
language sql security definer
set search_path = pg_catalog, public
as $$
    with pruned as (delete from apple_revocations where finished_at < now() - interval '90 days')
    select count(*) filter (where state = 'pending'), count(*) filter (where state = 'failed') from apple_revocations
$$;

-- Applies one verified notification from Apple, once per jti. Returns the outcome:
-- duplicate, unknown_user, sessions_revoked, account_deleted, email_updated or ignored.
create function apply_apple_notification(notification_id text, event_type text, subject text, new_email text) returns text
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    account uuid;
    result text;
begin
    insert into apple_notifications (jti, type, outcome) values (notification_id, event_type, 'applying')
    on conflict (jti) do nothing;
    if not found then
        return 'duplicate';
    end if;
    delete from apple_notifications n where n.received_at < now() - interval '90 days';
    -- No row lock here: delete_my_account takes its locks (diaries first) in the same order
    -- as DELETE /v1/me, so the two cannot deadlock.
    select u.id into account from users u where u.apple_sub = subject;
    if account is null then
        result := 'unknown_user';
    elsif event_type = 'consent-revoked' then
        update sessions s set revoked_at = now() where s.user_id = account and s.revoked_at is null;
        delete from apple_tokens t where t.user_id = account;
        result := 'sessions_revoked';
    elsif event_type = 'account-delete' then
        perform set_config('app.user_id', account::text, true);
        perform delete_my_account();
        perform set_config('app.user_id', '', true);
        result := 'account_deleted';
    elsif event_type = 'email-disabled' then
        update users u set email = null where u.id = account;
        result := 'email_updated';
    elsif event_type = 'email-enabled' then
        update users u set email = coalesce(new_email, u.email) where u.id = account;
        result := 'email_updated';
    else
        result := 'ignored';
    end if;
    update apple_notifications n set outcome = result where n.jti = notification_id;
    return result;
end
$$;

revoke execute on function store_apple_token(uuid, text, bytea), queue_apple_revocation(),
    claim_apple_revocations(integer, interval), finish_apple_revocation(uuid, text, integer, text),
    apple_revocation_counts(), apply_apple_notification(text, text, text, text) from public;
grant execute on function store_apple_token(uuid, text, bytea), claim_apple_revocations(integer, interval),
    finish_apple_revocation(uuid, text, integer, text), apple_revocation_counts(),
    apply_apple_notification(text, text, text, text) to diary_app;
