-- Definitions: accounts. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.add_user(id uuid, display_name text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    account uuid;
begin
    perform set_app_setting('app.writer', 'add_user');
    insert into users as u (id, display_name) values (coalesce(add_user.id, gen_random_uuid()), add_user.display_name)
    returning u.id into account;
    perform set_app_setting('app.writer', '');
    perform welcome_user(account);
    return account;
end
$$;

COMMENT ON FUNCTION public.add_user(id uuid, display_name text) IS 'An account with no sign-in, for operators, seeds and tests (not granted to diary_app), with welcome_user''s side effects.';

REVOKE ALL ON FUNCTION public.add_user(id uuid, display_name text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.authenticate(session uuid, caller uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    if not exists (
        select 1 from sessions s
        where s.id = authenticate.session and s.user_id = authenticate.caller and s.revoked_at is null
    ) then
        raise exception 'the session has ended; sign in again' using errcode = 'ZN401';
    end if;
    perform set_app_setting('app.user_id', caller::text);
    -- The session too, so that what the release still serving registers without naming it
    -- (register_device's two arguments) is bound to it.
    perform set_app_setting('app.session_id', session::text);
    perform refresh_app_diary_ids();
end
$$;

COMMENT ON FUNCTION public.authenticate(session uuid, caller uuid) IS 'Sets the caller''s identity for the current transaction only, after checking that the session is live and belongs to that user (ZN401 otherwise), records the session (app.session_id), then loads their diaries and visible users. The server calls it at the start of every authenticated request.';

REVOKE ALL ON FUNCTION public.authenticate(session uuid, caller uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.authenticate(session uuid, caller uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.delete_my_account() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := require_caller();
begin
    perform forget_user(caller);
end
$$;

COMMENT ON FUNCTION public.delete_my_account() IS 'DELETE /v1/me: forget_user for the caller.';

REVOKE ALL ON FUNCTION public.delete_my_account() FROM PUBLIC;
GRANT ALL ON FUNCTION public.delete_my_account() TO diary_app;

CREATE OR REPLACE FUNCTION public.forget_user(account uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    authored record;
    membership record;
    departed record;
begin
    -- Its memberships end without leaving a former member behind (drop_diary_member).
    perform set_app_setting('app.forgetting_user', account::text);
    -- One diary at a time, so that on Citus each lock routes to its diary's shard.
    for membership in select u.diary_id from user_diaries u where u.user_id = account order by u.diary_id loop
        perform 1 from diaries d where d.id = membership.diary_id for update;
    end loop;
    for authored in
        select e.diary_id, array_agg(e.id) as ids from entries e where e.user_id = account group by e.diary_id order by e.diary_id
    loop
        perform forget_entries(authored.diary_id, authored.ids, true);
    end loop;
    for membership in select u.diary_id from user_diaries u where u.user_id = account order by u.diary_id loop
        perform drop_diary_member(membership.diary_id, account);
    end loop;
    insert into photo_garbage (content_hash)
    select distinct u.content_hash from photo_uploads u where u.uploader_id = account
    on conflict (content_hash) do nothing;
    -- Apart, not in a UNION with the uploads: Citus plans that INSERT wrongly, a reference
    -- table beside a coordinator's ("more target columns than expressions").
    insert into photo_garbage (content_hash)
    select f.content_hash from profile_photos f where f.user_id = account
    on conflict (content_hash) do nothing;
    insert into apple_revocations (token_id, client_id, sealed)
    select t.token_id, t.client_id, t.sealed from apple_tokens t where t.user_id = account
    on conflict (token_id) do nothing;
    if found then
        perform announce('apple_revocations');
    end if;
    for departed in select f.diary_id from former_members f where f.user_id = account order by f.diary_id loop
        perform 1 from diaries d where d.id = departed.diary_id for update;
        delete from former_members f where f.diary_id = departed.diary_id and f.user_id = account;
        -- A closed diary kept for nobody now goes, as hand_on_or_close would have let it.
        if exists (select 1 from diaries d where d.id = departed.diary_id and d.closed_at is not null)
           and not exists (select 1 from former_members f where f.diary_id = departed.diary_id) then
            perform forget_diary(departed.diary_id);
        end if;
    end loop;
    perform set_app_setting('app.forgetting_user', '');
    perform set_app_setting('app.writer', 'forget_user');
    delete from photo_uploads u where u.uploader_id = account;
    delete from profile_photos f where f.user_id = account;
    -- Its sockets close at once: the sessions go with the account.
    perform announce_session_end(s.id) from sessions s where s.user_id = account and s.revoked_at is null;
    delete from users u where u.id = account;
    perform set_app_setting('app.writer', '');
end
$$;

COMMENT ON FUNCTION public.forget_user(account uuid) IS 'Deletes an account and everything only theirs: entries (forget_entries), memberships (drop_diary_member), departures (and a closed diary kept for nobody else, forget_diary), uploads and the profile photo (queued as photo garbage); queues the revocation of their Apple tokens.';

REVOKE ALL ON FUNCTION public.forget_user(account uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.live_sessions(ids uuid[]) RETURNS SETOF uuid
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    select s.id from sessions s where s.id = any (ids) and s.revoked_at is null
$$;

COMMENT ON FUNCTION public.live_sessions(ids uuid[]) IS 'Of these sessions, those still live (not revoked or deleted): realtime sockets close when their session is no longer among them.';

REVOKE ALL ON FUNCTION public.live_sessions(ids uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.live_sessions(ids uuid[]) TO diary_app;

CREATE OR REPLACE FUNCTION public.open_session(apple_subject text, dev_account text, email text, display_name text, session uuid, refresh_token_hash bytea, lifetime interval) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    account uuid;
    created boolean;
begin
    if (apple_subject is null) = (dev_account is null) then
        raise exception 'exactly one of apple_subject and dev_account' using errcode = '22023';
    end if;
    -- An account that has nothing to change is only read: on Citus, users is a reference
    -- table, and a write to it needs every node, so a returning user signs in while a worker
    -- is down.
    if apple_subject is not null then
        select u.id into account from users u
        where u.apple_sub = apple_subject and (open_session.email is null or u.email is not distinct from open_session.email);
    else
        select u.id into account from users u where u.dev_name = dev_account;
    end if;
    created := false;
    if account is null then
        perform set_app_setting('app.writer', 'open_session');
        if apple_subject is not null then
            insert into users as u (apple_sub, email, display_name)
            values (apple_subject, open_session.email, open_session.display_name)
            on conflict (apple_sub) do update set email = coalesce(excluded.email, u.email)
            returning u.id, u.xmax = 0 into account, created;
        else
            insert into users as u (dev_name, display_name) values (dev_account, dev_account)
            on conflict (dev_name) do update set dev_name = excluded.dev_name
            returning u.id, u.xmax = 0 into account, created;
        end if;
        perform set_app_setting('app.writer', '');
    end if;
    if created then
        perform welcome_user(account);
    end if;
    insert into sessions (id, user_id) values (session, account);
    insert into refresh_tokens (token_hash, session_id, expires_at) values (refresh_token_hash, session, now() + lifetime);
    perform set_app_setting('app.user_id', account::text);
    perform refresh_app_diary_ids();
    return account;
end
$$;

COMMENT ON FUNCTION public.open_session(apple_subject text, dev_account text, email text, display_name text, session uuid, refresh_token_hash bytea, lifetime interval) IS 'Signs in: finds or creates the account by Apple subject or dev name, opens a session with its first refresh token, and makes the account the transaction''s caller. SQL cannot verify the Apple token or allow dev sign-in, so the server does, and only diary_app may call this.';

REVOKE ALL ON FUNCTION public.open_session(apple_subject text, dev_account text, email text, display_name text, session uuid, refresh_token_hash bytea, lifetime interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.open_session(apple_subject text, dev_account text, email text, display_name text, session uuid, refresh_token_hash bytea, lifetime interval) TO diary_app;

CREATE OR REPLACE FUNCTION public.rotate_refresh_token(presented bytea, successor bytea, lifetime interval) RETURNS TABLE(outcome text, session_id uuid, user_id uuid, issued_at timestamp with time zone)
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
    perform announce_session_end(owning_session.id);
    return query select 'reuse_detected'::text, owning_session.id, owning_session.user_id, null::timestamptz;
end
$$;

COMMENT ON FUNCTION public.rotate_refresh_token(presented bytea, successor bytea, lifetime interval) IS 'Exchanges a refresh token (both passed as hashes) for its successor, which the server derives from the presented token so that a retry derives the same one: rotated, replayed (a retry within 10 s), reuse_detected (a used token came back: the session is revoked), revoked or unknown. Never raises for a bad token, so that a revocation commits; on success the session''s user becomes the transaction''s caller.';

REVOKE ALL ON FUNCTION public.rotate_refresh_token(presented bytea, successor bytea, lifetime interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.rotate_refresh_token(presented bytea, successor bytea, lifetime interval) TO diary_app;

CREATE OR REPLACE FUNCTION public.update_me(display_name text, profile_image_url text, time_zone text, settings jsonb) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := require_caller();
    old_settings jsonb;
    old_zone text;
begin
    select u.settings, u.time_zone into old_settings, old_zone from users u where u.id = caller for update;
    perform set_app_setting('app.writer', 'update_me');
    update users u set
        display_name = coalesce(update_me.display_name, u.display_name),
        profile_image_url = coalesce(update_me.profile_image_url, u.profile_image_url),
        time_zone = coalesce(update_me.time_zone, u.time_zone),
        settings = u.settings || coalesce(jsonb_strip_nulls(update_me.settings), '{}')
    where u.id = caller;
    perform set_app_setting('app.writer', '');
    if found then
        perform reschedule_reminder(caller, old_settings, old_zone);
    end if;
end
$$;

COMMENT ON FUNCTION public.update_me(display_name text, profile_image_url text, time_zone text, settings jsonb) IS 'PATCH me: the caller''s profile and settings (merged), with the reminder rescheduled when its settings changed.';

REVOKE ALL ON FUNCTION public.update_me(display_name text, profile_image_url text, time_zone text, settings jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION public.update_me(display_name text, profile_image_url text, time_zone text, settings jsonb) TO diary_app;

CREATE OR REPLACE FUNCTION public.welcome_user(account uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    waiting text;
begin
    perform reschedule_reminder(account, null, null);
    for waiting in
        select b.event_id from billing_events b
        where b.outcome = 'unknown_user' and b.received_at > now() - interval '7 days'
          and exists (select 1 from unnest(b.user_ids || b.transferred_to) named (id) where lower(named.id) = account::text)
        order by b.event_at, b.event_id
    loop
        perform apply_billing_event(waiting);
    end loop;
end
$$;

COMMENT ON FUNCTION public.welcome_user(account uuid) IS 'A new account''s side effects: its reminder, and the RevenueCat events that arrived before it (applied in order).';

REVOKE ALL ON FUNCTION public.welcome_user(account uuid) FROM PUBLIC;

-- Policies

DROP POLICY IF EXISTS users_delete ON public.users;
CREATE POLICY users_delete ON public.users FOR DELETE USING ((id = ( SELECT public.app_user_id() AS app_user_id)));

DROP POLICY IF EXISTS users_insert ON public.users;
CREATE POLICY users_insert ON public.users FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS users_select ON public.users;
CREATE POLICY users_select ON public.users FOR SELECT USING (((id = ANY (( SELECT public.app_visible_user_ids() AS app_visible_user_ids)::uuid[])) IS TRUE));

DROP POLICY IF EXISTS users_update ON public.users;
CREATE POLICY users_update ON public.users FOR UPDATE USING ((id = ( SELECT public.app_user_id() AS app_user_id))) WITH CHECK ((id = ( SELECT public.app_user_id() AS app_user_id)));

DROP POLICY IF EXISTS refresh_tokens_delete ON public.refresh_tokens;
CREATE POLICY refresh_tokens_delete ON public.refresh_tokens FOR DELETE USING (false);

DROP POLICY IF EXISTS refresh_tokens_insert ON public.refresh_tokens;
CREATE POLICY refresh_tokens_insert ON public.refresh_tokens FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS refresh_tokens_select ON public.refresh_tokens;
CREATE POLICY refresh_tokens_select ON public.refresh_tokens FOR SELECT USING (false);

DROP POLICY IF EXISTS refresh_tokens_update ON public.refresh_tokens;
CREATE POLICY refresh_tokens_update ON public.refresh_tokens FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS sessions_delete ON public.sessions;
CREATE POLICY sessions_delete ON public.sessions FOR DELETE USING (false);

DROP POLICY IF EXISTS sessions_insert ON public.sessions;
CREATE POLICY sessions_insert ON public.sessions FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS sessions_select ON public.sessions;
CREATE POLICY sessions_select ON public.sessions FOR SELECT USING ((user_id = ( SELECT public.app_user_id() AS app_user_id)));

DROP POLICY IF EXISTS sessions_update ON public.sessions;
CREATE POLICY sessions_update ON public.sessions FOR UPDATE USING ((user_id = ( SELECT public.app_user_id() AS app_user_id))) WITH CHECK ((user_id = ( SELECT public.app_user_id() AS app_user_id)));

-- Triggers

CREATE OR REPLACE TRIGGER users_added_by_open_session BEFORE INSERT ON public.users FOR EACH STATEMENT EXECUTE FUNCTION public.refuse_direct_write('open_session', 'add_user');

CREATE OR REPLACE TRIGGER users_deleted_by_forget_user BEFORE DELETE ON public.users FOR EACH ROW EXECUTE FUNCTION public.refuse_direct_write('forget_user');

CREATE OR REPLACE TRIGGER users_set_updated_at BEFORE UPDATE ON public.users FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();

CREATE OR REPLACE TRIGGER users_settings_by_update_me BEFORE UPDATE OF settings, time_zone ON public.users FOR EACH ROW WHEN (((old.settings IS DISTINCT FROM new.settings) OR (old.time_zone IS DISTINCT FROM new.time_zone))) EXECUTE FUNCTION public.refuse_direct_write('update_me');
