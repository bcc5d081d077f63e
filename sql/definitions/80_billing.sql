-- Definitions: billing. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.apply_billing_event(id text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    e billing_events;
    target uuid;
    source uuid;
    result text;
    -- Worked out here and bound as a value: Citus refuses a function that is not IMMUTABLE
    -- inside a COALESCE of an UPDATE of one of its tables.
    expired timestamptz;
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
        expired := least(coalesce(e.expiration_at, now()), now());
        update users u set premium_expires_at = expired, premium_event_at = e.event_at where u.id = target;
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

COMMENT ON FUNCTION public.apply_billing_event(id text) IS 'Applies a recorded RevenueCat event (just received, or waiting for its user) to the user''s premium_* fields and records the outcome: applied, older, ignored or unknown_user. The users'' rows are locked, so one user''s events apply in their own order whatever order they arrive in.';

REVOKE ALL ON FUNCTION public.apply_billing_event(id text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.billing_user(ids text[]) RETURNS uuid
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'public'
    AS $_$
    select u.id from unnest(ids) with ordinality as candidate (text, position)
    join users u on u.id = case when candidate.text ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then candidate.text::uuid end
    order by candidate.position limit 1
$_$;

COMMENT ON FUNCTION public.billing_user(ids text[]) IS 'The first of a RevenueCat event''s user ids that is one of our users; ids that are not our user ids are ignored.';

REVOKE ALL ON FUNCTION public.billing_user(ids text[]) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.my_billing_events() RETURNS TABLE(event_id text, event_type text, product_id text, expiration_at timestamp with time zone, event_at timestamp with time zone, received_at timestamp with time zone, outcome text)
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    select b.event_id, b.event_type, b.product_id, b.expiration_at, b.event_at, b.received_at, b.outcome
    from billing_events b
    where app_user_id() is not null
      and (app_user_id()::text = any (b.user_ids) or app_user_id()::text = any (b.transferred_from) or app_user_id()::text = any (b.transferred_to))
    order by b.event_at, b.event_id
$$;

COMMENT ON FUNCTION public.my_billing_events() IS 'The caller''s purchase events, for their personal export (APPI disclosure). billing_events itself is readable by nobody, since one event may name several users.';

REVOKE ALL ON FUNCTION public.my_billing_events() FROM PUBLIC;
GRANT ALL ON FUNCTION public.my_billing_events() TO diary_app;

CREATE OR REPLACE FUNCTION public.record_billing_event(id text, type text, user_ids text[], transferred_from text[], transferred_to text[], product_id text, couple boolean, expiration_at timestamp with time zone, event_at timestamp with time zone, environment text, accepted boolean, body jsonb) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

COMMENT ON FUNCTION public.record_billing_event(id text, type text, user_ids text[], transferred_from text[], transferred_to text[], product_id text, couple boolean, expiration_at timestamp with time zone, event_at timestamp with time zone, environment text, accepted boolean, body jsonb) IS 'Records a RevenueCat webhook event once and applies it: a repeated event id returns duplicate and changes nothing. With accepted false (a sandbox event where those are not accepted) it only records it.';

REVOKE ALL ON FUNCTION public.record_billing_event(id text, type text, user_ids text[], transferred_from text[], transferred_to text[], product_id text, couple boolean, expiration_at timestamp with time zone, event_at timestamp with time zone, environment text, accepted boolean, body jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION public.record_billing_event(id text, type text, user_ids text[], transferred_from text[], transferred_to text[], product_id text, couple boolean, expiration_at timestamp with time zone, event_at timestamp with time zone, environment text, accepted boolean, body jsonb) TO diary_app;

CREATE OR REPLACE FUNCTION public.user_plan(user_id uuid) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    account users%rowtype;
begin
    select * into account from users u where u.id = user_plan.user_id;
    if not found then
        return null;
    end if;
    if account.premium_expires_at > now() then
        return case when account.premium_couple then 'couple' else 'premium' end;
    end if;
    if exists (
        select 1 from user_diaries me
        join user_diaries partner on partner.diary_id = me.diary_id and partner.user_id <> me.user_id
        join users p on p.id = partner.user_id
        where me.user_id = account.id and me.diary_type = 'couple' and p.premium_couple and p.premium_expires_at > now()
    ) then
        return 'couple';
    end if;
    return 'free';
end
$$;

COMMENT ON FUNCTION public.user_plan(user_id uuid) IS 'A user''s plan: premium (their own), couple (their own couple plan, or a premium couple-plan partner in a couple diary they share) or free. The partner''s grant is read from the memberships, not stored, so it ends the moment either leaves.';

REVOKE ALL ON FUNCTION public.user_plan(user_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.user_plan(user_id uuid) TO diary_app;

-- Policies

DROP POLICY IF EXISTS billing_events_delete ON public.billing_events;
CREATE POLICY billing_events_delete ON public.billing_events FOR DELETE USING (false);

DROP POLICY IF EXISTS billing_events_insert ON public.billing_events;
CREATE POLICY billing_events_insert ON public.billing_events FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS billing_events_select ON public.billing_events;
CREATE POLICY billing_events_select ON public.billing_events FOR SELECT USING (false);

DROP POLICY IF EXISTS billing_events_update ON public.billing_events;
CREATE POLICY billing_events_update ON public.billing_events FOR UPDATE USING (false) WITH CHECK (false);
