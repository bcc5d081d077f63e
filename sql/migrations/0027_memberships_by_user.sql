-- A user's memberships, keyed by the user: what every request reads to learn the caller's
-- diaries (refresh_app_diary_ids) and plan (user_plan). diary_members is keyed, and on Citus
-- sharded, by diary, so reading it by user asks every shard: on the cluster that was about
-- 50 ms a request. user_diaries is kept by the functions that add, drop and promote members,
-- in their transaction, and lives on the coordinator on Citus. It holds the diary's type,
-- which never changes, for the co-members a non-anonymous diary shows.

create table user_diaries (
    user_id uuid not null references users (id) on delete cascade,
    diary_id uuid not null,
    role text not null check (role in ('owner', 'member')),
    diary_type text not null,
    primary key (user_id, diary_id)
);
create index user_diaries_diary on user_diaries (diary_id, user_id);
alter table user_diaries enable row level security;
alter table user_diaries force row level security;
-- Read and written only by SECURITY DEFINER functions, as the owner.
revoke all on user_diaries from diary_app;

insert into user_diaries (user_id, diary_id, role, diary_type)
select m.user_id, m.diary_id, m.role, d.type from diary_members m join diaries d on d.id = m.diary_id;

create or replace function add_diary_member(diary uuid, member uuid, role text, joined_at timestamptz default null) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    entries_in_diary integer;
    kind text;
    unread integer;
    alias uuid;
begin
    -- Shared: posts, which update this row first, wait until the member is in.
    select d.entry_count, d.type into entries_in_diary, kind from diaries d where d.id = diary for share;
    unread := coalesce(entries_in_diary, 0)
        - (select count(*) from entries e where e.diary_id = diary and e.user_id = member)
        - (select count(*) from entry_reads r
           join entries e on e.diary_id = r.diary_id and e.id = r.entry_id
           where r.diary_id = diary and r.user_id = member and e.user_id <> member);
    perform set_app_setting('app.writer', 'add_diary_member');
    insert into diary_members as m (diary_id, user_id, role, joined_at, unread_count)
    values (diary, member, add_diary_member.role, coalesce(add_diary_member.joined_at, now()), unread)
    returning m.alias_id into alias;
    insert into user_diaries (user_id, diary_id, role, diary_type) values (member, diary, add_diary_member.role, kind);
    perform set_app_setting('app.writer', '');
    insert into change_log (diary_id, kind, user_id, user_alias) values (diary, 'member.joined', member, alias);
    perform announce('diary_changes');
    if app_user_id() is not null then
        perform refresh_app_diary_ids();
    end if;
end
$$;

create or replace function hand_on_or_close(diary uuid) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    heir uuid;
begin
    select m.user_id into heir from diary_members m where m.diary_id = diary order by m.joined_at, m.user_id limit 1;
    if heir is null then
        perform forget_diary(diary);
        return;
    end if;
    perform set_app_setting('app.writer', 'hand_on_or_close');
    update diary_members m set role = 'owner' where m.diary_id = diary and m.user_id = heir;
    update user_diaries u set role = 'owner' where u.user_id = heir and u.diary_id = diary;
    perform set_app_setting('app.writer', '');
end
$$;

create or replace function drop_diary_member(diary uuid, member uuid) returns text
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    alias uuid;
    dropped_role text;
begin
    perform set_app_setting('app.writer', 'drop_diary_member');
    delete from diary_members m where m.diary_id = diary and m.user_id = member
    returning m.alias_id, m.role into alias, dropped_role;
    delete from user_diaries u where u.user_id = member and u.diary_id = diary;
    perform set_app_setting('app.writer', '');
    if dropped_role is null then
        return null;
    end if;
    insert into change_log (diary_id, kind, user_id, user_alias) values (diary, 'member.left', member, alias);
    perform announce('diary_changes');
    if dropped_role = 'owner' then
        perform hand_on_or_close(diary);
    end if;
    perform check_one_owner(diary);
    if app_user_id() is not null then
        perform refresh_app_diary_ids();
    end if;
    return dropped_role;
end
$$;

create or replace function forget_diary(diary uuid) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
begin
    insert into photo_garbage (content_hash)
    select distinct p.content_hash from entry_photos p where p.diary_id = diary
    on conflict (content_hash) do nothing;
    perform set_app_setting('app.writer', 'forget_diary');
    delete from entry_reads r where r.diary_id = diary;
    delete from entry_photos p where p.diary_id = diary;
    delete from entries e where e.diary_id = diary;
    delete from diary_members m where m.diary_id = diary;
    delete from user_diaries u where u.diary_id = diary;
    delete from diaries d where d.id = diary;
    perform set_app_setting('app.writer', '');
end
$$;

create or replace function refresh_app_diary_ids() returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := app_user_id();
begin
    if caller is null then
        perform set_app_setting('app.diary_ids', '{}'), set_app_setting('app.visible_user_ids', '{}');
        return;
    end if;
    perform
        set_app_setting('app.diary_ids', array(select u.diary_id from user_diaries u where u.user_id = caller)::text),
        set_app_setting('app.visible_user_ids', array(
            select caller
            union
            select co.user_id
            from user_diaries mine
            join user_diaries co on co.diary_id = mine.diary_id
            where mine.user_id = caller and mine.diary_type <> 'anonymous'
        )::text);
end
$$;

create or replace function user_plan(user_id uuid) returns text
    language plpgsql stable security definer
    set search_path = pg_catalog, public
as $$
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

create or replace function create_diary(diary uuid, name text, type text, free_limit integer) returns void
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
       and (select count(*) from user_diaries u where u.user_id = caller and u.role = 'owner') >= free_limit then
        raise exception 'the free plan owns % diaries', free_limit using errcode = 'ZN006';
    end if;
    perform create_diary_as(caller, diary, create_diary.name, create_diary.type);
end
$$;

create trigger user_diaries_kept_by_the_membership_functions before insert or update or delete on user_diaries
    for each row execute function refuse_direct_write('add_diary_member', 'drop_diary_member', 'hand_on_or_close', 'forget_diary', 'forget_user');

comment on table user_diaries is
    'A user''s memberships keyed by the user, with the diary''s type: what each request reads for the caller''s diaries and plan, without asking every shard of diary_members. Kept in step by add_diary_member, drop_diary_member, hand_on_or_close and forget_diary.';
