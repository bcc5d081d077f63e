-- The second wall: PostgreSQL enforces the same row rules as the Swift policies in
-- Sources/DiaryServer/Authorization, so no bug in Swift can leak one diary into another.
-- Each policy here is named <table>_<command>, as is its Swift twin:
-- `grep -rn entries_update sql Sources` finds the pair.
--
-- Roles (cluster-wide, so the administrator creates them; see README "Database roles"):
--   diary_owner  owns every object and runs the migrations. It has BYPASSRLS, which is
--                what lets the SECURITY DEFINER functions below see past the policies;
--                each of them checks its caller itself.
--   diary_app    the server's login role. Owns nothing, has no BYPASSRLS, and may touch
--                only what is granted at the end of this file.
--
-- The caller's identity is app.user_id, set per transaction by authenticate() (or by
-- open_session / rotate_refresh_token while signing in), never per session. With no
-- identity, diary_app sees no row of any table.

do $$
begin
    if not exists (select from pg_roles where rolname = 'diary_app') then
        raise exception 'role diary_app does not exist'
            using hint = 'create it before migrating: create role diary_app login nobypassrls (README, "Database roles")';
    end if;
    if (select rolbypassrls from pg_roles where rolname = 'diary_app') then
        raise exception 'role diary_app must not have BYPASSRLS';
    end if;
    if not (select rolbypassrls or rolsuper from pg_roles where rolname = current_user) then
        raise exception 'the migrating role % needs BYPASSRLS: its SECURITY DEFINER functions must see past the policies', current_user
            using hint = 'alter role ' || current_user || ' bypassrls';
    end if;
end
$$;

-- The caller, redefined so PostgreSQL can inline it: every policy reads it, and a
-- function with a SET clause is never inlined but called, with a GUC save and restore
-- each time. Instead of pinning search_path, the body names everything by schema, so
-- no search_path can change what it means.
create or replace function app_user_id() returns uuid
language sql stable
as $$
    select nullif(pg_catalog.current_setting('app.user_id', true), '')::pg_catalog.uuid
$$;

-- The caller's diaries, as an array a policy compares against once per statement:
-- `diary_id = any ((select app_diary_ids())::uuid[])` is an initPlan plus an index
-- condition. It is read from app.diary_ids, which refresh_app_diary_ids() fills when
-- the identity is set and again whenever the caller's own memberships change, so a
-- policy costs no query at all. Like app.user_id it lives for one transaction.
create function app_diary_ids() returns uuid[]
language sql stable
as $$
    select nullif(pg_catalog.current_setting('app.diary_ids', true), '')::pg_catalog.uuid[]
$$;

-- SECURITY DEFINER because it reads diary_members beneath that table's own policy,
-- which is written in terms of app_diary_ids(); it only ever answers for the caller.
create function refresh_app_diary_ids() returns void
language plpgsql volatile security definer
set search_path = pg_catalog, public
as $$
begin
    perform set_config('app.diary_ids',
        (select coalesce(array_agg(m.diary_id), '{}') from diary_members m where m.user_id = app_user_id())::text, true);
end
$$;

create function refresh_app_diary_ids_after_membership_change() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    if coalesce(new.user_id, old.user_id) = app_user_id() then
        perform refresh_app_diary_ids();
    end if;
    return null;
end
$$;

-- Joining, creating, leaving and deleting the account all change the caller's own rows here.
create trigger diary_members_refresh_app_diary_ids
    after insert or delete on diary_members
    for each row execute function refresh_app_diary_ids_after_membership_change();

-- As in 0002, and the caller's diaries with the identity.
create or replace function authenticate(session uuid, caller uuid) returns void
language plpgsql volatile security definer
set search_path = pg_catalog, public
as $$
begin
    if not exists (
        select 1 from sessions s
        where s.id = authenticate.session and s.user_id = authenticate.caller and s.revoked_at is null
    ) then
        raise exception 'session is not valid' using errcode = 'ZN401';
    end if;
    perform set_config('app.user_id', caller::text, true);
    perform refresh_app_diary_ids();
end
$$;

-- The users whose row the caller may see: themself, and the members of their diaries
-- that are not anonymous. Anonymous co-members stay hidden even from a query that
-- forgets member_profiles' aliases.
create function app_visible_user_ids() returns uuid[]
language plpgsql stable security definer
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := app_user_id();
begin
    if caller is null then
        return '{}';
    end if;
    return array(
        select caller
        union
        select m.user_id
        from diary_members mine
        join diaries d on d.id = mine.diary_id and d.type <> 'anonymous'
        join diary_members m on m.diary_id = mine.diary_id
        where mine.user_id = caller
    );
end
$$;

-- These read diary_members on the caller's behalf, beneath its policy.
alter function is_diary_member(uuid) security definer;
alter function is_diary_owner(uuid) security definer;
-- The owner check at commit must count every member, whoever the caller is.
alter function check_diary_has_one_owner() security definer;
-- They act only for app_user_id() and check it themselves (0003).
alter function remove_diary_member(uuid, uuid) security definer;
alter function delete_my_account() security definer;

-- A joiner cannot see the diary yet, so join_diary runs as the owner; it acts only
-- for the caller.
create or replace function join_diary(invite_code text, user_id uuid) returns uuid
language plpgsql volatile security definer
set search_path = pg_catalog, public
as $$
declare
    joining_user constant uuid := join_diary.user_id;
    found_diary diaries%rowtype;
    member_count integer;
begin
    if joining_user is distinct from (select app_user_id()) then
        raise exception 'join_diary joins only the caller' using errcode = '42501';
    end if;

    select * into found_diary
    from diaries d
    where d.invite_code = normalize_invite_code(join_diary.invite_code)
    for update;
    if not found then
        raise exception 'invite code is not valid' using errcode = 'ZN001';
    end if;

    if exists (select 1 from diary_members m where m.diary_id = found_diary.id and m.user_id = joining_user) then
        return found_diary.id;
    end if;

    select count(*) into member_count from diary_members m where m.diary_id = found_diary.id;
    if member_count >= diary_member_cap(found_diary.type) then
        raise exception 'diary is full' using errcode = 'ZN002';
    end if;

    insert into diary_members (diary_id, user_id, role) values (found_diary.id, joining_user, 'member');
    return found_diary.id;
end
$$;

-- A new diary and its owner's membership, which the caller could not insert as
-- themself: the diary is invisible to them until the membership exists.
create function create_diary(diary uuid, name text, type text) returns void
language plpgsql volatile security definer
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := (select app_user_id());
begin
    if caller is null then
        raise exception 'no caller' using errcode = 'ZN401';
    end if;
    insert into diaries (id, name, type, created_by) values (diary, create_diary.name, create_diary.type, caller);
    insert into diary_members (diary_id, user_id, role) values (diary, caller, 'owner');
end
$$;

-- Signs in: finds or creates the account (by Apple subject or dev name), opens a
-- session with its first refresh token, and makes the account the transaction's caller.
-- The server has verified the Apple token or allowed dev sign-in; SQL cannot, so only
-- diary_app may call this.
create function open_session(
    apple_subject text, dev_account text, email text, display_name text,
    session uuid, refresh_token_hash bytea, lifetime interval
) returns uuid
language plpgsql volatile security definer
set search_path = pg_catalog, public
as $$
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
    perform set_config('app.user_id', account::text, true);
    perform refresh_app_diary_ids();
    return account;
end
$$;

-- As in 0002, plus: a successful exchange makes the session's user the caller.
create or replace function rotate_refresh_token(presented bytea, successor bytea, lifetime interval)
returns table (outcome text, session_id uuid, user_id uuid, issued_at timestamptz)
language plpgsql volatile security definer
set search_path = pg_catalog, public
as $$
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
        perform set_config('app.user_id', owning_session.user_id::text, true);
        perform refresh_app_diary_ids();
        return query select 'rotated'::text, owning_session.id, owning_session.user_id, now();
        return;
    end if;
    select * into next_token from refresh_tokens t where t.token_hash = successor and t.session_id = owning_session.id;
    if token.rotated_at > now() - interval '10 seconds' and found and next_token.rotated_at is null then
        perform set_config('app.user_id', owning_session.user_id::text, true);
        perform refresh_app_diary_ids();
        return query select 'replayed'::text, owning_session.id, owning_session.user_id, next_token.issued_at;
        return;
    end if;
    update sessions s set revoked_at = now() where s.id = owning_session.id;
    return query select 'reuse_detected'::text, owning_session.id, owning_session.user_id, null::timestamptz;
end
$$;

-- Anonymous co-members' user rows are hidden now (users_select), so their profiles
-- come from the alias alone: a left join keeps them listed.
create or replace view member_profiles with (security_invoker = true) as
select
    m.diary_id,
    m.user_id,
    m.role,
    m.joined_at,
    hidden.is_hidden,
    case when hidden.is_hidden then m.alias_id else m.user_id end as public_id,
    case when hidden.is_hidden
        then '匿名' || row_number() over (partition by m.diary_id order by m.joined_at, m.alias_id)
        else u.display_name
    end as display_name,
    case when hidden.is_hidden then null else u.profile_image_url end as profile_image_url
from diary_members m
join diaries d on d.id = m.diary_id
left join users u on u.id = m.user_id
cross join lateral (
    select d.type = 'anonymous' and m.user_id is distinct from (select app_user_id()) as is_hidden
) hidden;

-- Policies. Every table is enabled and forced; every command has its policy, `false`
-- where diary_app must go through a function. Twins: Sources/DiaryServer/Authorization.

alter table users enable row level security;
alter table users force row level security;
create policy users_select on users for select using (id = any ((select app_visible_user_ids())::uuid[]));
create policy users_insert on users for insert with check (false);
create policy users_update on users for update
    using (id = (select app_user_id())) with check (id = (select app_user_id()));
create policy users_delete on users for delete using (id = (select app_user_id()));

alter table diaries enable row level security;
alter table diaries force row level security;
create policy diaries_select on diaries for select using (id = any ((select app_diary_ids())::uuid[]));
create policy diaries_insert on diaries for insert with check (created_by = (select app_user_id()));
create policy diaries_update on diaries for update
    using (id = any ((select app_diary_ids())::uuid[])) with check (is_diary_owner(id));
create policy diaries_delete on diaries for delete using (is_diary_owner(id));

alter table diary_members enable row level security;
alter table diary_members force row level security;
create policy diary_members_select on diary_members for select using (diary_id = any ((select app_diary_ids())::uuid[]));
create policy diary_members_insert on diary_members for insert with check (false);
create policy diary_members_update on diary_members for update using (false) with check (false);
create policy diary_members_delete on diary_members for delete
    using (diary_id = any ((select app_diary_ids())::uuid[]) and (user_id = (select app_user_id()) or is_diary_owner(diary_id)));

alter table entries enable row level security;
alter table entries force row level security;
create policy entries_select on entries for select using (diary_id = any ((select app_diary_ids())::uuid[]));
create policy entries_insert on entries for insert
    with check (user_id = (select app_user_id()) and diary_id = any ((select app_diary_ids())::uuid[]));
create policy entries_update on entries for update
    using (diary_id = any ((select app_diary_ids())::uuid[]))
    with check (user_id = (select app_user_id()) and diary_id = any ((select app_diary_ids())::uuid[]));
create policy entries_delete on entries for delete
    using (diary_id = any ((select app_diary_ids())::uuid[]) and user_id = (select app_user_id()));

alter table entry_reads enable row level security;
alter table entry_reads force row level security;
create policy entry_reads_select on entry_reads for select using (diary_id = any ((select app_diary_ids())::uuid[]));
create policy entry_reads_insert on entry_reads for insert
    with check (user_id = (select app_user_id()) and diary_id = any ((select app_diary_ids())::uuid[]));
create policy entry_reads_update on entry_reads for update
    using (user_id = (select app_user_id()))
    with check (user_id = (select app_user_id()) and diary_id = any ((select app_diary_ids())::uuid[]));
create policy entry_reads_delete on entry_reads for delete using (false);

alter table sessions enable row level security;
alter table sessions force row level security;
create policy sessions_select on sessions for select using (user_id = (select app_user_id()));
create policy sessions_insert on sessions for insert with check (false);
create policy sessions_update on sessions for update
    using (user_id = (select app_user_id())) with check (user_id = (select app_user_id()));
create policy sessions_delete on sessions for delete using (false);

alter table refresh_tokens enable row level security;
alter table refresh_tokens force row level security;
create policy refresh_tokens_select on refresh_tokens for select using (false);
create policy refresh_tokens_insert on refresh_tokens for insert with check (false);
create policy refresh_tokens_update on refresh_tokens for update using (false) with check (false);
create policy refresh_tokens_delete on refresh_tokens for delete using (false);

alter table questions enable row level security;
alter table questions force row level security;
create policy questions_select on questions for select using (true);
create policy questions_insert on questions for insert with check (false);
create policy questions_update on questions for update using (false) with check (false);
create policy questions_delete on questions for delete using (false);

-- Privileges: nothing for PUBLIC beyond what PostgreSQL itself needs; diary_app gets
-- exactly what the server's queries use.
-- (Extensions' functions, such as pgcrypto's gen_random_bytes, keep their own grants.)
revoke all on all tables in schema public from public;
do $$
declare
    function regprocedure;
begin
    for function in
        select p.oid::regprocedure from pg_proc p
        where p.pronamespace = 'public'::regnamespace
          and not exists (select from pg_depend d where d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e')
    loop
        execute format('revoke execute on function %s from public', function);
    end loop;
end
$$;

grant select, insert, update, delete on users, diaries, diary_members, entries, entry_reads to diary_app;
grant select, update on sessions to diary_app;
grant select on questions, member_profiles to diary_app;
grant execute on function
    app_user_id(), app_diary_ids(), refresh_app_diary_ids(), app_visible_user_ids(), is_diary_member(uuid), is_diary_owner(uuid),
    authenticate(uuid, uuid), open_session(text, text, text, text, uuid, bytea, interval),
    rotate_refresh_token(bytea, bytea, interval), create_diary(uuid, text, text), join_diary(text, uuid),
    mark_as_read(uuid, uuid), remove_diary_member(uuid, uuid), delete_my_account(),
    generate_invite_code(), normalize_invite_code(text), diary_member_cap(text), set_updated_at()
    to diary_app;
