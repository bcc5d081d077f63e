-- On Citus a request's identity (app.user_id, app.diary_ids, app.visible_user_ids) must
-- reach the workers, where the policies of a diary's shard read it. set_config(…, true)
-- never leaves the coordinator: a member's routed read there returned no rows, and no
-- error. Citus sends SET LOCAL on (citus.propagate_set_commands = 'local'), to every node
-- the transaction uses, then and later. set_app_setting sets an app.* value that way on a
-- cluster, and with set_config on a single PostgreSQL, where the two are the same.
create function set_app_setting(setting text, value text) returns void
language plpgsql
set search_path = pg_catalog
as $$
begin
    if setting !~ '^app\.[a-z_]+$' then
        raise exception 'not an app setting: %', setting using errcode = '22023';
    end if;
    if current_setting('citus.propagate_set_commands', true) is null then
        perform set_config(setting, value, true);
    else
        set local citus.propagate_set_commands = 'local';
        execute format('set local %s = %L', setting, value);
    end if;
end
$$;
revoke execute on function set_app_setting(text, text) from public;

create or replace function public.authenticate(session uuid, caller uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    if not exists (
        select 1 from sessions s
        where s.id = authenticate.session and s.user_id = authenticate.caller and s.revoked_at is null
    ) then
        raise exception 'session is not valid' using errcode = 'ZN401';
    end if;
    perform set_app_setting('app.user_id', caller::text);
    perform refresh_app_diary_ids();
end
$$;

create or replace function public.refresh_app_diary_ids() RETURNS void
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
        set_app_setting('app.diary_ids', array(select m.diary_id from diary_members m where m.user_id = caller)::text),
        set_app_setting('app.visible_user_ids', array(
            select caller
            union
            select co.user_id
            from diary_members mine
            join diaries d on d.id = mine.diary_id and d.type <> 'anonymous'
            join diary_members co on co.diary_id = mine.diary_id
            where mine.user_id = caller
        )::text);
end
$$;

create or replace function public.open_session(apple_subject text, dev_account text, email text, display_name text, session uuid, refresh_token_hash bytea, lifetime interval) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    account uuid;
begin
    if (apple_subject is null) = (dev_account is null) then
        raise exception 'exactly one of apple_subject and dev_account' using errcode = '22023';
    end if;
    if apple_subject is not null then
        insert into users as u (apple_sub, email, display_name)
        values (apple_subject, open_session.email, open_session.display_name)
        on conflict (apple_sub) do update set email = coalesce(excluded.email, u.email)
        returning u.id into account;
    else
        insert into users as u (dev_name, display_name) values (dev_account, dev_account)
        on conflict (dev_name) do update set dev_name = excluded.dev_name
        returning u.id into account;
    end if;
    insert into sessions (id, user_id) values (session, account);
    insert into refresh_tokens (token_hash, session_id, expires_at) values (refresh_token_hash, session, now() + lifetime);
    perform set_app_setting('app.user_id', account::text);
    perform refresh_app_diary_ids();
    return account;
end
$$;

create or replace function public.rotate_refresh_token(presented bytea, successor bytea, lifetime interval) RETURNS TABLE(outcome text, session_id uuid, user_id uuid, issued_at timestamp with time zone)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    token refresh_tokens%rowtype;
    owning_session sessions%rowtype;
    next_token refresh_tokens%rowtype;
begin
    select * into token from refresh_tokens t where t.token_hash = presented for update;
    if not found then
        return query select 'unknown'::text, null::uuid, null::uuid, null::timestamptz;
        return;
    end if;
    select * into owning_session from sessions s where s.id = token.session_id for update;
    if owning_session.revoked_at is not null or token.expires_at < now() then
        return query select 'revoked'::text, owning_session.id, owning_session.user_id, null::timestamptz;
        return;
    end if;
    if token.rotated_at is null then
        update refresh_tokens t set rotated_at = now() where t.token_hash = presented;
        insert into refresh_tokens (token_hash, session_id, issued_at, expires_at)
        values (successor, owning_session.id, now(), now() + lifetime);
        perform set_app_setting('app.user_id', owning_session.user_id::text);
        perform refresh_app_diary_ids();
        return query select 'rotated'::text, owning_session.id, owning_session.user_id, now();
        return;
    end if;
    select * into next_token from refresh_tokens t where t.token_hash = successor and t.session_id = owning_session.id;
    if token.rotated_at > now() - interval '10 seconds' and found and next_token.rotated_at is null then
        perform set_app_setting('app.user_id', owning_session.user_id::text);
        perform refresh_app_diary_ids();
        return query select 'replayed'::text, owning_session.id, owning_session.user_id, next_token.issued_at;
        return;
    end if;
    update sessions s set revoked_at = now() where s.id = owning_session.id;
    return query select 'reuse_detected'::text, owning_session.id, owning_session.user_id, null::timestamptz;
end
$$;

create or replace function public.apply_apple_notification(notification_id text, event_type text, subject text, new_email text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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
        perform set_app_setting('app.user_id', account::text);
        perform delete_my_account();
        perform set_app_setting('app.user_id', '');
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
