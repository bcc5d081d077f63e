-- users_select asked app_visible_user_ids() for the caller's co-members, and that was a
-- query (a definer function with a join) in every statement that reads member_profiles,
-- once per mention of the view: it made a timeline about a third slower with RLS on.
-- Now the answer is computed with the caller's diaries and kept, like app.diary_ids, in a
-- transaction-local setting (app.visible_user_ids), refreshed whenever it may change:
--   * the identity changes: authenticate, open_session and rotate_refresh_token all end
--     in refresh_app_diary_ids();
--   * a membership row is inserted or deleted in this transaction (join, create, leave,
--     removal by the owner, account deletion): the trigger refreshes it;
--   * a diary's type changes: it no longer can (below), since anonymity hangs on it.
-- Memberships committed by other transactions meanwhile show up in the next request,
-- which is a new transaction. Like app.user_id and app.diary_ids, the setting is only as
-- trustworthy as the role that may call set_config: the policies guard against a query
-- that forgets a filter, not against diary_app itself.

-- The caller's diaries and the users they may see, computed when the identity is set or
-- the memberships change, in one statement: a join of a few index lookups per request,
-- instead of a definer-function call per statement that reads member_profiles.
-- (Written as a join on the caller, not `= any (diary_ids)`: with an array parameter
-- PostgreSQL kept re-planning it on every call, which cost more than the query.)
create or replace function refresh_app_diary_ids() returns void
language plpgsql volatile security definer
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := app_user_id();
begin
    if caller is null then
        perform set_config('app.diary_ids', '{}', true), set_config('app.visible_user_ids', '{}', true);
        return;
    end if;
    perform
        set_config('app.diary_ids', array(select m.diary_id from diary_members m where m.user_id = caller)::text, true),
        set_config('app.visible_user_ids', array(
            select caller
            union
            select co.user_id
            from diary_members mine
            join diaries d on d.id = mine.diary_id and d.type <> 'anonymous'
            join diary_members co on co.diary_id = mine.diary_id
            where mine.user_id = caller
        )::text, true);
end
$$;

-- The users whose row the caller may see: themself, and the members of their diaries
-- that are not anonymous. Now a setting read that PostgreSQL can inline, like app_diary_ids().
create or replace function app_visible_user_ids() returns uuid[]
language sql stable
as $$
    select coalesce(nullif(pg_catalog.current_setting('app.visible_user_ids', true), '')::pg_catalog.uuid[], '{}')
$$;

-- Any membership change in the caller's transaction may change whom they see, not only
-- a change of their own rows: an owner removing a member no longer sees that member.
create or replace function refresh_app_diary_ids_after_membership_change() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    if app_user_id() is not null then
        perform refresh_app_diary_ids();
    end if;
    return null;
end
$$;

-- A diary's type is fixed when it is made: it sets the member cap, and an anonymous
-- diary turned into a couple diary would unmask its members.
create function forbid_diary_type_change() returns trigger
language plpgsql
set search_path = pg_catalog, public
as $$
begin
    raise exception 'a diary''s type cannot change' using errcode = '23514', constraint = 'diaries_type_fixed';
end
$$;

create trigger diaries_type_fixed
    before update of type on diaries
    for each row when (old.type is distinct from new.type)
    execute function forbid_diary_type_change();

revoke execute on function forbid_diary_type_change() from public;
