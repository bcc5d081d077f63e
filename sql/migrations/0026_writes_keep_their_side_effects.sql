-- Every write with effects beyond its row makes them itself, in the function that writes,
-- as post_entry and mark_as_read do (0024, 0025): memberships, edits and deletions of
-- entries, renames, photos, and accounts. Triggers made them before; on Citus a trigger
-- runs on a shard, where it cannot reach another table, and a trigger on a reference table
-- runs once for every copy. What is left on the tables are row guards: each write that
-- has side effects is refused unless the function that makes them is writing (app.writer),
-- so that no path skips them, not an operator's psql nor a cascade.
--
-- The functions:
--   add_diary_member, drop_diary_member   a member's unread_count, member.joined/left,
--                                          user_diaries, the caller's diary ids, the owner
--                                          handed on
--   forget_entries, forget_diary           counters, receipts, photo garbage, entry.deleted
--   forget_user                            all of the above for an account, and Apple's revocation
--   edit_entry, delete_entry, rename_diary the requests, with the policies' answers
--   create_diary_as, add_user, update_me   diaries with their owner; accounts with reminders
--                                          and the billing events that waited for them

-- Accepts any of the functions named in the trigger's arguments, and `migrate --citus`
-- moving rows that exist already onto their shards (their side effects were made when
-- they were written). A row guard lets the row through; a statement guard's answer is
-- ignored.
create or replace function refuse_direct_write() returns trigger
    language plpgsql
    set search_path = pg_catalog, public
as $$
begin
    if not (coalesce(current_setting('app.writer', true), '') = any (tg_argv || '{citus_layout}'::text[])) then
        raise exception '% on % is made only by %(), which keep its side effects', tg_op, tg_table_name, array_to_string(tg_argv, '(), ')
            using errcode = 'insufficient_privilege';
    end if;
    if tg_op = 'DELETE' then
        return old;
    end if;
    return new;
end
$$;

create function check_one_owner(diary uuid) returns void
    language plpgsql
    set search_path = pg_catalog, public
as $$
begin
    if exists (select 1 from diaries d where d.id = diary)
       and (select count(*) from diary_members m where m.diary_id = diary and m.role = 'owner') <> 1 then
        raise exception 'diary % must have exactly one owner', diary
            using errcode = '23514', constraint = 'diary_members_exactly_one_owner';
    end if;
end
$$;

-- ---------------------------------------------------------------- memberships

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

create function add_diary_member(diary uuid, member uuid, role text, joined_at timestamptz default null) returns void
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
revoke all on function add_diary_member(uuid, uuid, text, timestamptz) from public;

-- Closes the diary when nobody is left, else makes the longest-standing member its owner.
create function hand_on_or_close(diary uuid) returns void
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
revoke all on function hand_on_or_close(uuid) from public;

-- Returns the role the member had, or null if they were not one.
create function drop_diary_member(diary uuid, member uuid) returns text
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
revoke all on function drop_diary_member(uuid, uuid) from public;

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

-- ---------------------------------------------------------------- entries and diaries

-- Deletes entries of one diary with what hangs on them: the counters they held, their
-- receipts and photos (queued as garbage), and, when `logged`, entry.deleted for each.
create function forget_entries(diary uuid, ids uuid[], logged boolean) returns integer
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    gone record;
    forgotten integer := 0;
begin
    -- The diary's row first, as post_entry takes it (entry_count) before the members'
    -- rows (unread_count): the other order deadlocks with a concurrent post.
    perform 1 from diaries d where d.id = diary for update;
    update diary_members m set unread_count = m.unread_count - unread.count
    from (
        select other.user_id, count(*)::integer as count
        from entries e join diary_members other on other.diary_id = e.diary_id and other.user_id <> e.user_id
        where e.diary_id = diary and e.id = any (ids)
          and not exists (
              select 1 from entry_reads r
              where r.diary_id = e.diary_id and r.entry_id = e.id and r.user_id = other.user_id)
        group by other.user_id
    ) unread
    where m.diary_id = diary and m.user_id = unread.user_id;
    insert into photo_garbage (content_hash)
    select distinct p.content_hash from entry_photos p where p.diary_id = diary and p.entry_id = any (ids)
    on conflict (content_hash) do nothing;
    perform set_app_setting('app.writer', 'forget_entries');
    delete from entry_reads r where r.diary_id = diary and r.entry_id = any (ids);
    delete from entry_photos p where p.diary_id = diary and p.entry_id = any (ids);
    for gone in delete from entries e where e.diary_id = diary and e.id = any (ids) returning e.id, e.user_id loop
        forgotten := forgotten + 1;
        if logged then
            insert into change_log (diary_id, kind, entry_id, user_id) values (diary, 'entry.deleted', gone.id, gone.user_id);
        end if;
    end loop;
    perform set_app_setting('app.writer', '');
    if forgotten > 0 then
        update diaries d set entry_count = d.entry_count - forgotten where d.id = diary;
        if logged then
            perform announce('diary_changes');
        end if;
    end if;
    return forgotten;
end
$$;
revoke all on function forget_entries(uuid, uuid[], boolean) from public;

-- A diary nobody is left in, with everything in it. Nothing is logged: nobody is left to tell.
create function forget_diary(diary uuid) returns void
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
revoke all on function forget_diary(uuid) from public;

-- What a request may change of an entry, with the policies' answers: not a member's or no
-- such entry is not_found, another's is forbidden.
create function entry_verdict(diary uuid, entry uuid) returns text
    language plpgsql
    set search_path = pg_catalog, public
as $$
declare
    author uuid;
begin
    if app_user_id() is null or not (diary = any (app_diary_ids())) then
        return 'not_found';
    end if;
    select e.user_id into author from entries e where e.diary_id = diary and e.id = entry for update;
    if not found then
        return 'not_found';
    end if;
    return case when author = app_user_id() then 'permitted' else 'forbidden' end;
end
$$;
revoke all on function entry_verdict(uuid, uuid) from public;

create function edit_entry(diary uuid, entry uuid, content text, question text) returns text
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    verdict constant text := entry_verdict(diary, entry);
begin
    if verdict <> 'permitted' then
        return verdict;
    end if;
    perform set_app_setting('app.writer', 'edit_entry');
    update entries e set content = coalesce(edit_entry.content, e.content), question = coalesce(edit_entry.question, e.question)
    where e.diary_id = diary and e.id = entry
      and (e.content, e.question) is distinct from (coalesce(edit_entry.content, e.content), coalesce(edit_entry.question, e.question));
    perform set_app_setting('app.writer', '');
    if found then
        perform log_edited_entry(diary, entry);
    end if;
    return 'edited';
end
$$;
revoke all on function edit_entry(uuid, uuid, text, text) from public;
grant execute on function edit_entry(uuid, uuid, text, text) to diary_app;

create function log_edited_entry(diary uuid, entry uuid) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
begin
    insert into change_log (diary_id, kind, entry_id, user_id, user_alias)
    select e.diary_id, 'entry.updated', e.id, e.user_id, m.alias_id
    from entries e left join diary_members m on m.diary_id = e.diary_id and m.user_id = e.user_id
    where e.diary_id = diary and e.id = entry;
    perform announce('diary_changes');
end
$$;
revoke all on function log_edited_entry(uuid, uuid) from public;

create function delete_entry(diary uuid, entry uuid) returns text
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    verdict constant text := entry_verdict(diary, entry);
begin
    if verdict <> 'permitted' then
        return verdict;
    end if;
    perform forget_entries(diary, array[entry], true);
    return 'deleted';
end
$$;
revoke all on function delete_entry(uuid, uuid) from public;
grant execute on function delete_entry(uuid, uuid) to diary_app;

-- What the diaries policies answer the caller about changing a diary: not a member's is
-- not_found, a member's who is not the owner forbidden.
create function diary_verdict(diary uuid) returns text
    language plpgsql
    set search_path = pg_catalog, public
as $$
begin
    if app_user_id() is null or not (diary = any (app_diary_ids())) then
        return 'not_found';
    end if;
    return case when is_diary_owner(diary) then 'permitted' else 'forbidden' end;
end
$$;
revoke all on function diary_verdict(uuid) from public;

create function rename_diary(diary uuid, name text) returns text
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    verdict constant text := diary_verdict(diary);
begin
    if verdict <> 'permitted' then
        return verdict;
    end if;
    perform set_app_setting('app.writer', 'rename_diary');
    update diaries d set name = rename_diary.name where d.id = diary and d.name is distinct from rename_diary.name;
    perform set_app_setting('app.writer', '');
    if found then
        insert into change_log (diary_id, kind) values (diary, 'diary.updated');
        perform announce('diary_changes');
    end if;
    return 'renamed';
end
$$;
revoke all on function rename_diary(uuid, text) from public;
grant execute on function rename_diary(uuid, text) to diary_app;

-- A function, like every write whose statements a request reads back: on Citus a request
-- cannot write a shard as itself and then as the owner in one transaction.
create function rotate_invite_code(diary uuid) returns text
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    verdict constant text := diary_verdict(diary);
begin
    if verdict <> 'permitted' then
        return verdict;
    end if;
    update diaries d set invite_code = generate_invite_code() where d.id = diary;
    perform register_invite_code(diary);
    return 'rotated';
end
$$;
revoke all on function rotate_invite_code(uuid) from public;
grant execute on function rotate_invite_code(uuid) to diary_app;

create function create_diary_as(
    owner uuid, diary uuid, name text, type text, invite_code text default null, created_at timestamptz default null
) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
begin
    perform set_app_setting('app.writer', 'create_diary_as');
    insert into diaries (id, name, type, created_by, invite_code, created_at)
    values (diary, create_diary_as.name, create_diary_as.type, owner,
        coalesce(create_diary_as.invite_code, generate_invite_code()), coalesce(create_diary_as.created_at, now()));
    perform set_app_setting('app.writer', '');
    perform register_invite_code(diary);
    perform add_diary_member(diary, owner, 'owner', create_diary_as.created_at);
    perform check_one_owner(diary);
end
$$;
revoke all on function create_diary_as(uuid, uuid, text, text, text, timestamptz) from public;

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

create or replace function join_diary(invite_code text, user_id uuid) returns uuid
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    joining_user constant uuid := join_diary.user_id;
    target constant uuid := invite_code_diary(join_diary.invite_code);
    found_diary diaries%rowtype;
    member_count integer;
begin
    if joining_user is distinct from (select app_user_id()) then
        raise exception 'join_diary joins only the caller' using errcode = '42501';
    end if;

    -- By the diary's id, a value rather than a call, so that on Citus the lock goes to the
    -- diary's own shard: Citus refuses FOR UPDATE on a query it cannot route.
    select * into found_diary
    from diaries d
    where d.id = target and d.invite_code = normalize_invite_code(join_diary.invite_code)
    for update;
    if not found then
        raise exception 'invite code is not valid' using errcode = 'ZN001';
    end if;

    if exists (select 1 from diary_members m where m.diary_id = found_diary.id and m.user_id = joining_user) then
        -- A concurrent join of ours committed after this transaction read its diaries.
        perform refresh_app_diary_ids();
        return found_diary.id;
    end if;

    select count(*) into member_count from diary_members m where m.diary_id = found_diary.id;
    if member_count >= diary_member_cap(found_diary.type) then
        raise exception 'diary is full' using errcode = 'ZN002';
    end if;

    perform add_diary_member(found_diary.id, joining_user, 'member');
    return found_diary.id;
end
$$;

create or replace function remove_diary_member(diary uuid, target uuid) returns text
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := (select app_user_id());
    removed_user uuid;
begin
    if caller is null or not is_diary_member(diary) then
        return 'not_found';
    end if;
    -- Serialise with joins and other removals on this diary.
    perform 1 from diaries d where d.id = diary for update;
    select p.user_id into removed_user from member_profiles p where p.diary_id = diary and p.public_id = target;
    if removed_user is null then
        return 'not_found';
    end if;
    if removed_user <> caller and not is_diary_owner(diary) then
        return 'forbidden';
    end if;
    perform drop_diary_member(diary, removed_user);
    return 'removed';
end
$$;

-- ---------------------------------------------------------------- photos

create or replace function set_entry_photos(diary uuid, entry uuid, photos uuid[]) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := app_user_id();
    current_photos uuid[];
    allowed integer;
    photo uuid;
begin
    if caller is null then
        raise exception 'not signed in' using errcode = 'ZN401';
    end if;
    perform 1 from entries e
    where e.diary_id = diary and e.id = entry and e.user_id = caller
      and exists (select 1 from diary_members m where m.diary_id = diary and m.user_id = caller)
    for update;
    if not found then
        return;
    end if;
    current_photos := array(select p.id from entry_photos p where p.diary_id = diary and p.entry_id = entry order by p.position);
    if current_photos = photos then
        return;
    end if;
    allowed := photos_per_entry(caller);
    if cardinality(photos) > allowed then
        raise exception 'the plan allows % photos an entry', allowed using errcode = 'ZN006';
    end if;
    foreach photo in array photos loop
        continue when photo = any (current_photos);
        continue when exists (select 1 from photo_uploads u where u.id = photo and u.uploader_id = caller);
        if exists (select 1 from entry_photos p where p.id = photo and p.uploader_id = caller) then
            raise exception 'photo % is attached to another entry', photo using errcode = 'ZN005';
        end if;
        raise exception 'no such photo' using errcode = 'ZN004';
    end loop;
    -- The dropped photos' files, and the uploads' (now the entry's), are garbage unless
    -- something still names their hash; the sweeper checks.
    insert into photo_garbage (content_hash)
    select p.content_hash from entry_photos p where p.diary_id = diary and p.entry_id = entry and p.id <> all (photos)
    union
    select u.content_hash from photo_uploads u where u.id = any (photos) and u.uploader_id = caller
    on conflict (content_hash) do nothing;
    perform set_app_setting('app.writer', 'set_entry_photos');
    delete from entry_photos p where p.diary_id = diary and p.entry_id = entry and p.id <> all (photos);
    update entry_photos p set position = o.position - 1
    from unnest(photos) with ordinality as o (id, position)
    where p.diary_id = diary and p.entry_id = entry and p.id = o.id and p.position <> o.position - 1;
    insert into entry_photos (diary_id, id, entry_id, position, uploader_id, content_hash, content_type, bytes, width, height, created_at, content_crc32)
    select diary, u.id, entry, o.position - 1, u.uploader_id, u.content_hash, u.content_type, u.bytes, u.width, u.height, u.created_at, u.content_crc32
    from unnest(photos) with ordinality as o (id, position)
    join photo_uploads u on u.id = o.id and u.uploader_id = caller;
    delete from photo_uploads u where u.id = any (photos) and u.uploader_id = caller;
    update entries e set images = array(select x::text from unnest(photos) x)
    where e.diary_id = diary and e.id = entry and e.images is distinct from array(select x::text from unnest(photos) x);
    perform set_app_setting('app.writer', '');
    if found then
        perform log_edited_entry(diary, entry);
    end if;
end
$$;

create or replace function expire_photo_uploads(max_age interval) returns integer
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    expired integer;
begin
    insert into photo_garbage (content_hash)
    select distinct u.content_hash from photo_uploads u where u.created_at < now() - max_age
    on conflict (content_hash) do nothing;
    perform set_app_setting('app.writer', 'expire_photo_uploads');
    delete from photo_uploads u where u.created_at < now() - max_age;
    get diagnostics expired = row_count;
    perform set_app_setting('app.writer', '');
    return expired;
end
$$;

-- ---------------------------------------------------------------- accounts

-- The reminder follows the settings: off deletes the schedule, a change of time or zone (or
-- turning it on) schedules it anew. `old_settings` null is a new account.
create function reschedule_reminder(account uuid, old_settings jsonb, old_zone text) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    settings jsonb;
    zone text;
begin
    select u.settings, u.time_zone into settings, zone from users u where u.id = account;
    if not coalesce((settings ->> 'notification_reminder')::boolean, true) then
        delete from reminder_schedule r where r.user_id = account;
    elsif old_settings is null then
        insert into reminder_schedule (user_id) values (account) on conflict (user_id) do nothing;
    elsif old_zone is distinct from zone
        or old_settings ->> 'reminder_time' is distinct from settings ->> 'reminder_time'
        or not coalesce((old_settings ->> 'notification_reminder')::boolean, true) then
        insert into reminder_schedule (user_id) values (account)
        on conflict (user_id) do update set next_at = null;
    end if;
end
$$;
revoke all on function reschedule_reminder(uuid, jsonb, text) from public;

-- A new account's reminder, and the RevenueCat events that arrived before it did.
create function welcome_user(account uuid) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
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
revoke all on function welcome_user(uuid) from public;

-- For operators, seeds and tests (not granted to diary_app): an account with no sign-in.
create function add_user(id uuid, display_name text) returns uuid
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
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
revoke all on function add_user(uuid, text) from public;

create or replace function open_session(
    apple_subject text, dev_account text, email text, display_name text, session uuid, refresh_token_hash bytea, lifetime interval
) returns uuid
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    account uuid;
    created boolean;
begin
    if (apple_subject is null) = (dev_account is null) then
        raise exception 'exactly one of apple_subject and dev_account' using errcode = '22023';
    end if;
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

create function update_me(display_name text, profile_image_url text, time_zone text, settings jsonb) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := app_user_id();
    old_settings jsonb;
    old_zone text;
begin
    if caller is null then
        raise exception 'not signed in' using errcode = 'ZN401';
    end if;
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
revoke all on function update_me(text, text, text, jsonb) from public;
grant execute on function update_me(text, text, text, jsonb) to diary_app;

-- An account and everything only theirs: their entries (wherever they are), their
-- memberships (ownership handed on, or the diary closed), their uploads, and the Apple
-- tokens to revoke. Diaries are locked first, in id order, as every account deletion does.
create function forget_user(account uuid) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    authored record;
    membership record;
begin
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
    insert into apple_revocations (token_id, client_id, sealed)
    select t.token_id, t.client_id, t.sealed from apple_tokens t where t.user_id = account
    on conflict (token_id) do nothing;
    if found then
        perform announce('apple_revocations');
    end if;
    perform set_app_setting('app.writer', 'forget_user');
    delete from photo_uploads u where u.uploader_id = account;
    delete from users u where u.id = account;
    perform set_app_setting('app.writer', '');
end
$$;
revoke all on function forget_user(uuid) from public;

create or replace function delete_my_account() returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := (select app_user_id());
begin
    if caller is null then
        raise exception 'no caller' using errcode = 'ZN401';
    end if;
    perform forget_user(caller);
end
$$;

create or replace function apply_apple_notification(notification_id text, event_type text, subject text, new_email text) returns text
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
    -- No row lock here: forget_user takes its locks (diaries first) in the same order as
    -- DELETE /v1/me, so the two cannot deadlock.
    select u.id into account from users u where u.apple_sub = subject;
    if account is null then
        result := 'unknown_user';
    elsif event_type = 'consent-revoked' then
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

-- ---------------------------------------------------------------- the change feed

-- In PL/pgSQL, which Citus can plan (it cannot plan a SQL function's parameters), and
-- without a subquery that has no FROM, which it refuses beside a correlated one: the
-- members of the change's diary, and the change's own user when not one of them.
create or replace function change_log_tail(after_xact xid8, after_seq bigint, max_rows integer)
    returns table (xact xid8, seq bigint, users uuid[], horizon xid8)
    language plpgsql stable security definer
    set search_path = pg_catalog, public
as $$
declare
    snapshot_xmin constant xid8 := pg_snapshot_xmin(pg_current_snapshot());
begin
    return query
        select c.xact, c.seq,
            array_remove(coalesce(
                (select array_agg(m.user_id) from diary_members m where m.diary_id = c.diary_id and m.user_id is distinct from c.user_id),
                '{}') || c.user_id, null),
            snapshot_xmin
        from change_log c
        where (c.xact, c.seq) > (after_xact, after_seq) and c.xact < snapshot_xmin
        order by c.xact, c.seq
        limit least(max_rows, 10000);
    if not found then
        return query select null::xid8, null::bigint, null::uuid[], snapshot_xmin;
    end if;
end
$$;

-- The same columns, with is_hidden spelled inline: Citus refuses the lateral subquery
-- without FROM that computed it once, beside the correlated subqueries that read the view.
create or replace view member_profiles with (security_invoker = true) as
select m.diary_id, m.user_id, m.role, m.joined_at,
    d.type = 'anonymous' and m.user_id is distinct from app_user_id() as is_hidden,
    case when d.type = 'anonymous' and m.user_id is distinct from app_user_id() then m.alias_id else m.user_id end as public_id,
    case when d.type = 'anonymous' and m.user_id is distinct from app_user_id()
        then '匿名' || row_number() over (partition by m.diary_id order by m.joined_at, m.alias_id)
        else u.display_name end as display_name,
    case when d.type = 'anonymous' and m.user_id is distinct from app_user_id() then null else u.profile_image_url end as profile_image_url
from diary_members m
join diaries d on d.id = m.diary_id
left join users u on u.id = m.user_id;

-- ---------------------------------------------------------------- the triggers, now guards

drop trigger diaries_exactly_one_owner on diaries;
drop trigger diaries_log_renamed on diaries;
drop trigger diary_members_count_unread on diary_members;
drop trigger diary_members_exactly_one_owner on diary_members;
drop trigger diary_members_log_joined on diary_members;
drop trigger diary_members_log_left on diary_members;
drop trigger diary_members_refresh_app_diary_ids on diary_members;
drop trigger entries_count_deleted on entries;
drop trigger entries_log_deleted on entries;
drop trigger entries_log_updated on entries;
drop trigger entry_photos_queue_garbage on entry_photos;
drop trigger photo_uploads_queue_garbage on photo_uploads;
drop trigger users_apply_waiting_billing_events on users;
drop trigger users_queue_apple_revocation on users;
drop trigger users_schedule_reminder on users;
drop function check_diary_has_one_owner();
drop function log_renamed_diary();
drop function count_unread_for_new_member();
drop function log_membership_changes();
drop function refresh_app_diary_ids_after_membership_change();
drop function count_deleted_entries();
drop function log_entry_changes();
drop function log_edited_entry();
drop function queue_photo_garbage();
drop function apply_waiting_billing_events();
drop function queue_apple_revocation();
drop function schedule_reminder();

-- Row guards on updates and deletions, so that a statement the policies leave with no rows
-- answers as before; statement guards on inserts, which always have rows.
create trigger diaries_made_by_create_diary before insert on diaries
    for each statement execute function refuse_direct_write('create_diary_as');
create trigger diaries_renamed_by_rename_diary before update of name on diaries
    for each row when (old.name is distinct from new.name) execute function refuse_direct_write('rename_diary');
create trigger diaries_deleted_by_forget_diary before delete on diaries
    for each row execute function refuse_direct_write('forget_diary');
create trigger diary_members_added_by_add_diary_member before insert on diary_members
    for each statement execute function refuse_direct_write('add_diary_member');
create trigger diary_members_owner_by_hand_on_or_close before update of role on diary_members
    for each row when (old.role is distinct from new.role) execute function refuse_direct_write('hand_on_or_close');
create trigger diary_members_dropped_by_drop_diary_member before delete on diary_members
    for each row execute function refuse_direct_write('drop_diary_member', 'forget_diary', 'forget_user');
create trigger entries_edited_by_edit_entry before update of content, question, images on entries
    for each row when ((old.content, old.question, old.images) is distinct from (new.content, new.question, new.images))
    execute function refuse_direct_write('edit_entry', 'set_entry_photos');
create trigger entries_deleted_by_forget_entries before delete on entries
    for each row execute function refuse_direct_write('forget_entries', 'forget_diary', 'forget_user');
create trigger entry_photos_deleted_by_forget_entries before delete on entry_photos
    for each row execute function refuse_direct_write('forget_entries', 'forget_diary', 'set_entry_photos', 'forget_user');
create trigger photo_uploads_deleted_by_their_functions before delete on photo_uploads
    for each row execute function refuse_direct_write('set_entry_photos', 'expire_photo_uploads', 'forget_user');
create trigger users_added_by_open_session before insert on users
    for each statement execute function refuse_direct_write('open_session', 'add_user');
create trigger users_settings_by_update_me before update of settings, time_zone on users
    for each row when ((old.settings, old.time_zone) is distinct from (new.settings, new.time_zone))
    execute function refuse_direct_write('update_me');
create trigger users_deleted_by_forget_user before delete on users
    for each row execute function refuse_direct_write('forget_user');
create trigger user_diaries_kept_by_the_membership_functions before insert or update or delete on user_diaries
    for each row execute function refuse_direct_write('add_diary_member', 'drop_diary_member', 'hand_on_or_close', 'forget_diary', 'forget_user');

comment on function refuse_direct_write() is
    'Trigger: refuses a write to its table unless one of the functions named in its arguments makes it (app.writer), so that no path, not even an operator''s psql or a cascade, skips the side effects those functions make.';
comment on function check_one_owner(uuid) is
    'Raises 23514 (diary_members_exactly_one_owner) unless the diary, if it exists, has exactly one owner. Called by the functions that add or drop members.';
comment on function add_diary_member(uuid, uuid, text, timestamptz) is
    'Adds a member with the unread_count the diary''s entries give them, logs member.joined and refreshes the caller''s diary ids. The only way a member is added (create_diary_as, join_diary; seeds).';
comment on function drop_diary_member(uuid, uuid) is
    'Removes a member, logs member.left, hands ownership on (or closes the diary) when the owner leaves, and refreshes the caller''s diary ids. Returns the role they had, or null.';
comment on function hand_on_or_close(uuid) is
    'After the owner leaves: the longest-standing member becomes owner, or the diary is forgotten when nobody is left.';
comment on function forget_entries(uuid, uuid[], boolean) is
    'Deletes entries of one diary with their receipts and photos (queued as photo garbage), takes them off entry_count and the other members'' unread_count, and logs entry.deleted when asked.';
comment on function forget_diary(uuid) is
    'Deletes a diary nobody is left in, with its entries, receipts, photos (queued as garbage) and members. Nothing is logged: nobody is left to tell.';
comment on function entry_verdict(uuid, uuid) is
    'What the entries policies answer the caller about changing an entry: not_found, forbidden, or permitted (the row then locked).';
comment on function edit_entry(uuid, uuid, text, text) is
    'PATCH entry: the author changes content and question; entry.updated is logged when something changed. Answers edited, not_found or forbidden.';
comment on function log_edited_entry(uuid, uuid) is
    'Logs entry.updated for an entry, with its author''s alias, and announces diary_changes.';
comment on function delete_entry(uuid, uuid) is
    'DELETE entry: the author deletes it through forget_entries. Answers deleted, not_found or forbidden.';
comment on function diary_verdict(uuid) is
    'What the diaries policies answer the caller about changing a diary: not_found, forbidden, or permitted.';
comment on function rotate_invite_code(uuid) is
    'POST invite-code: the owner draws a new code and registers it; the old one stops working. Answers rotated, not_found or forbidden.';
comment on function rename_diary(uuid, text) is
    'PATCH diary: the owner renames it; diary.updated is logged when the name changed. Answers renamed, not_found or forbidden.';
comment on function create_diary_as(uuid, uuid, text, text, text, timestamptz) is
    'A diary with its owner and registered invite code, for create_diary, operators and seeds (not granted to diary_app).';
comment on function reschedule_reminder(uuid, jsonb, text) is
    'Keeps reminder_schedule in step with an account''s settings: off deletes it; a new account, a change of time or zone, or turning it on schedules it.';
comment on function welcome_user(uuid) is
    'A new account''s side effects: its reminder, and the RevenueCat events that arrived before it (applied in order).';
comment on function add_user(uuid, text) is
    'An account with no sign-in, for operators, seeds and tests (not granted to diary_app), with welcome_user''s side effects.';
comment on function update_me(text, text, text, jsonb) is
    'PATCH me: the caller''s profile and settings (merged), with the reminder rescheduled when its settings changed.';
comment on function forget_user(uuid) is
    'Deletes an account and everything only theirs: entries (forget_entries), memberships (drop_diary_member), uploads (queued as photo garbage); queues the revocation of their Apple tokens.';
comment on function delete_my_account() is
    'DELETE /v1/me: forget_user for the caller.';
comment on table user_diaries is
    'A user''s memberships keyed by the user, with the diary''s type: what each request reads for the caller''s diaries and plan, without asking every shard of diary_members. Kept in step by add_diary_member, drop_diary_member, hand_on_or_close and forget_diary.';
