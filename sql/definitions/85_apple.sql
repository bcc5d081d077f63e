-- Definitions: apple. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.apple_revocation_counts() RETURNS TABLE(pending bigint, failed bigint)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    with pruned as (delete from apple_revocations where finished_at < now() - interval '90 days')
    select count(*) filter (where state = 'pending'), count(*) filter (where state = 'failed') from apple_revocations
$$;

COMMENT ON FUNCTION public.apple_revocation_counts() IS 'Pending and failed revocations, for the gauges; also deletes finished rows older than 90 days, kept until then as the record of what became of them.';

REVOKE ALL ON FUNCTION public.apple_revocation_counts() FROM PUBLIC;
GRANT ALL ON FUNCTION public.apple_revocation_counts() TO diary_app;

CREATE OR REPLACE FUNCTION public.apply_apple_notification(notification_id text, event_type text, subject text, new_email text) RETURNS text
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
    -- No row lock here: forget_user takes its locks (diaries first) in the same order as
    -- DELETE /v1/me, so the two cannot deadlock.
    select u.id into account from users u where u.apple_sub = subject;
    if account is null then
        result := 'unknown_user';
    elsif event_type = 'consent-revoked' then
        perform announce_session_end(s.id) from sessions s where s.user_id = account and s.revoked_at is null;
        update sessions s set revoked_at = now() where s.user_id = account and s.revoked_at is null;
        delete from apple_tokens t where t.user_id = account;
        result := 'sessions_revoked';
    elsif event_type = 'account-delete' then
        perform forget_user(account);
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

COMMENT ON FUNCTION public.apply_apple_notification(notification_id text, event_type text, subject text, new_email text) IS 'Applies one verified server-to-server notification from Apple, once per jti: consent-revoked revokes the sessions and drops the Apple token, account-delete deletes the account, email-disabled and email-enabled update the email. Returns duplicate, unknown_user, sessions_revoked, account_deleted, email_updated or ignored.';

REVOKE ALL ON FUNCTION public.apply_apple_notification(notification_id text, event_type text, subject text, new_email text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.apply_apple_notification(notification_id text, event_type text, subject text, new_email text) TO diary_app;

CREATE OR REPLACE FUNCTION public.claim_apple_revocations(max_rows integer, lease interval) RETURNS TABLE(token_id uuid, client_id text, sealed bytea, attempts integer, queued_at timestamp with time zone)
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

COMMENT ON FUNCTION public.claim_apple_revocations(max_rows integer, lease interval) IS 'Leases up to max_rows due revocations (SKIP LOCKED), so that one server at a time tries each.';

REVOKE ALL ON FUNCTION public.claim_apple_revocations(max_rows integer, lease interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.claim_apple_revocations(max_rows integer, lease interval) TO diary_app;

CREATE OR REPLACE FUNCTION public.finish_apple_revocation(token uuid, outcome text, delay_ms integer, error text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    result text;
    -- Worked out here and bound as values: Citus refuses a function that is not IMMUTABLE
    -- (timestamptz - interval is STABLE) inside a CASE of an UPDATE of one of its tables.
    settled constant timestamptz := now();
    stale_before constant timestamptz := settled - interval '7 days';
    due_again constant timestamptz := settled + make_interval(secs => delay_ms / 1000.0);
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
            available_at = due_again,
            state = case when r.queued_at < stale_before then 'failed' else 'pending' end,
            sealed = case when r.queued_at < stale_before then null else r.sealed end,
            finished_at = case when r.queued_at < stale_before then settled end
        where r.token_id = token and r.state = 'pending'
        returning r.state into result;
    else
        raise exception 'unknown outcome %', outcome using errcode = '22023';
    end if;
    return result;
end
$$;

COMMENT ON FUNCTION public.finish_apple_revocation(token uuid, outcome text, delay_ms integer, error text) IS 'Settles a claimed revocation and returns its state: revoked finishes it, failed records that Apple refuses it for good, retry makes it due again after delay_ms, or failed once it was queued more than 7 days ago. The sealed token goes once the row is finished either way.';

REVOKE ALL ON FUNCTION public.finish_apple_revocation(token uuid, outcome text, delay_ms integer, error text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.finish_apple_revocation(token uuid, outcome text, delay_ms integer, error text) TO diary_app;

CREATE OR REPLACE FUNCTION public.store_apple_token(token uuid, client text, sealed_token bytea) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := require_caller();
    -- Bound as a value: Citus refuses a function that is not IMMUTABLE in DO UPDATE SET.
    stored constant timestamptz := now();
begin
    insert into apple_tokens as t (user_id, token_id, client_id, sealed, stored_at)
    values (caller, token, client, sealed_token, stored)
    on conflict (user_id) do update
    set token_id = excluded.token_id, client_id = excluded.client_id, sealed = excluded.sealed, stored_at = excluded.stored_at;
end
$$;

COMMENT ON FUNCTION public.store_apple_token(token uuid, client text, sealed_token bytea) IS 'Keeps the caller''s newest Apple refresh token, sealed by the server, replacing any earlier one; it is kept only to be revoked when the account is deleted.';

REVOKE ALL ON FUNCTION public.store_apple_token(token uuid, client text, sealed_token bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION public.store_apple_token(token uuid, client text, sealed_token bytea) TO diary_app;

-- Policies

DROP POLICY IF EXISTS apple_notifications_delete ON public.apple_notifications;
CREATE POLICY apple_notifications_delete ON public.apple_notifications FOR DELETE USING (false);

DROP POLICY IF EXISTS apple_notifications_insert ON public.apple_notifications;
CREATE POLICY apple_notifications_insert ON public.apple_notifications FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS apple_notifications_select ON public.apple_notifications;
CREATE POLICY apple_notifications_select ON public.apple_notifications FOR SELECT USING (false);

DROP POLICY IF EXISTS apple_notifications_update ON public.apple_notifications;
CREATE POLICY apple_notifications_update ON public.apple_notifications FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS apple_revocations_delete ON public.apple_revocations;
CREATE POLICY apple_revocations_delete ON public.apple_revocations FOR DELETE USING (false);

DROP POLICY IF EXISTS apple_revocations_insert ON public.apple_revocations;
CREATE POLICY apple_revocations_insert ON public.apple_revocations FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS apple_revocations_select ON public.apple_revocations;
CREATE POLICY apple_revocations_select ON public.apple_revocations FOR SELECT USING (false);

DROP POLICY IF EXISTS apple_revocations_update ON public.apple_revocations;
CREATE POLICY apple_revocations_update ON public.apple_revocations FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS apple_tokens_delete ON public.apple_tokens;
CREATE POLICY apple_tokens_delete ON public.apple_tokens FOR DELETE USING (false);

DROP POLICY IF EXISTS apple_tokens_insert ON public.apple_tokens;
CREATE POLICY apple_tokens_insert ON public.apple_tokens FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS apple_tokens_select ON public.apple_tokens;
CREATE POLICY apple_tokens_select ON public.apple_tokens FOR SELECT USING (false);

DROP POLICY IF EXISTS apple_tokens_update ON public.apple_tokens;
CREATE POLICY apple_tokens_update ON public.apple_tokens FOR UPDATE USING (false) WITH CHECK (false);
