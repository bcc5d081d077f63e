-- Each diary orders its own changes. A change's position is a counter on its diary's row,
-- taken under the lock on that row that the write holds until it commits: the next write to
-- the diary waits for that commit before it takes the next position, so within a diary the
-- positions become visible in order, with no gaps that fill later. A reader that resumes
-- after the last position it got in each diary misses nothing and repeats nothing.
--
-- This replaces the order of 0008, the writing transaction's id below the snapshot's xmin.
-- Transaction ids belong to one node: on Citus each worker has its own, so that order cannot
-- hold there. A diary's row, its changes and the counter are on the diary's one shard. It
-- also ends 0008's weakness that one long transaction anywhere held back every socket.
--
-- Cursors carry a position for each diary (DiaryCore/Realtime/ChangeCursor). A diary the
-- cursor does not name, one joined since, starts where its member joined:
-- user_diaries.position_at_join, the position before their member.joined. Pruning records,
-- per diary, the highest position removed (pruned_position): a cursor below it may have
-- missed changes and is answered with a resync.
--
-- The old positions cannot be turned into new ones, so the log starts empty: a cursor of
-- the old form is unknown and gets a resync, which reloads the diary.
--
-- Lock order: every function that logs a change takes the diary's row before any other row
-- of that diary (post_entry does, by counting the entry on it), so that two writes in one
-- diary wait for each other instead of deadlocking.

truncate change_log;
drop function change_log_tail(xid8, bigint, integer);
drop function prune_change_log(interval, integer);
drop table change_log_horizon;
alter table change_log drop constraint change_log_pkey;
drop index change_log_tail;
drop index change_log_departures;
alter table change_log drop column xact, drop column seq;
alter table change_log add column position bigint not null;
alter table change_log add constraint change_log_pkey primary key (diary_id, position);

alter table diaries
    add column change_position bigint not null default 0,
    add column pruned_position bigint not null default 0;
alter table user_diaries add column position_at_join bigint not null default 0;

-- A NOTIFY names what it announces: announce(channel, payload) keeps 'channel:payload' in
-- the pending list, and announce_pending sends each with its payload. PostgreSQL folds
-- only identical notifications, so a transaction's changes in one diary wake once, and
-- each diary is named. A server's feed then reads the positions of the diaries named
-- (ChangeFeed), not of every diary it follows; an empty payload (0023's announce, or an
-- older server's) asks it to read them all.
create function announce(channel text, payload text) returns void
    language plpgsql
    set search_path = pg_catalog, public
as $$
begin
    perform announce(channel || ':' || payload);
end
$$;

create or replace function announce_pending() returns void
    language plpgsql
    set search_path = pg_catalog
as $$
declare
    pending text;
    split integer;
begin
    foreach pending in array coalesce(string_to_array(nullif(current_setting('app.announce', true), ''), ','), '{}') loop
        split := position(':' in pending);
        if split = 0 then
            perform pg_notify(pending, '');
        else
            perform pg_notify(left(pending, split - 1), substr(pending, split + 1));
        end if;
    end loop;
    perform set_config('app.announce', '', false);
end
$$;

-- A user belongs to at most this many diaries: each is a position in their cursor.
create function diaries_per_user_cap() returns integer
    language sql immutable
as $$ select 100 $$;

-- Appends a change at a position the caller has taken on the diary's row, and announces it.
create function log_change_at(diary uuid, logged bigint, kind text, entry uuid default null, member uuid default null, alias uuid default null)
    returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
begin
    insert into change_log (diary_id, position, kind, entry_id, user_id, user_alias)
    values (diary, logged, log_change_at.kind, entry, member, alias);
    -- Who is in the diary changed: the feed reads its members too.
    perform announce('diary_changes', case when kind in ('member.joined', 'member.left') then 'members ' else '' end || diary::text);
end
$$;
revoke all on function log_change_at(uuid, bigint, text, uuid, uuid, uuid) from public;

-- Takes the diary's next position and appends the change there. Returns the position, or
-- null when the diary is gone.
create function log_change(diary uuid, kind text, entry uuid default null, member uuid default null, alias uuid default null)
    returns bigint
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    logged bigint;
begin
    update diaries d set change_position = d.change_position + 1 where d.id = diary returning d.change_position into logged;
    if logged is not null then
        perform log_change_at(diary, logged, kind, entry, member, alias);
    end if;
    return logged;
end
$$;
revoke all on function log_change(uuid, text, uuid, uuid, uuid) from public;

-- ---------------------------------------------------------------- the writers

create or replace function add_diary_member(diary uuid, member uuid, role text, joined_at timestamptz default null) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    entries_in_diary integer;
    kind text;
    unread integer;
    alias uuid;
    joined bigint;
begin
    -- Posts, which update this row first, wait until the member is in.
    select d.entry_count, d.type into entries_in_diary, kind from diaries d where d.id = diary for no key update;
    if (select count(*) from user_diaries u where u.user_id = member) >= diaries_per_user_cap() then
        raise exception 'a user belongs to at most % diaries', diaries_per_user_cap() using errcode = 'ZN007';
    end if;
    unread := coalesce(entries_in_diary, 0)
        - (select count(*) from entries e where e.diary_id = diary and e.user_id = member)
        - (select count(*) from entry_reads r
           join entries e on e.diary_id = r.diary_id and e.id = r.entry_id
           where r.diary_id = diary and r.user_id = member and e.user_id <> member);
    perform set_app_setting('app.writer', 'add_diary_member');
    insert into diary_members as m (diary_id, user_id, role, joined_at, unread_count)
    values (diary, member, add_diary_member.role, coalesce(add_diary_member.joined_at, now()), unread)
    returning m.alias_id into alias;
    joined := log_change(diary, 'member.joined', null, member, alias);
    insert into user_diaries (user_id, diary_id, role, diary_type, position_at_join)
    values (member, diary, add_diary_member.role, kind, joined - 1);
    perform set_app_setting('app.writer', '');
    if app_user_id() is not null then
        perform refresh_app_diary_ids();
    end if;
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
    perform 1 from diaries d where d.id = diary for no key update;
    perform set_app_setting('app.writer', 'drop_diary_member');
    delete from diary_members m where m.diary_id = diary and m.user_id = member
    returning m.alias_id, m.role into alias, dropped_role;
    delete from user_diaries u where u.user_id = member and u.diary_id = diary;
    perform set_app_setting('app.writer', '');
    if dropped_role is null then
        return null;
    end if;
    perform log_change(diary, 'member.left', null, member, alias);
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

create or replace function forget_entries(diary uuid, ids uuid[], logged boolean) returns integer
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    gone record;
    forgotten integer := 0;
begin
    -- The diary's row first, as post_entry takes it (entry_count) before the members'
    -- rows (unread_count): the other order deadlocks with a concurrent post. In the mode
    -- the callers' verdicts take it (entry_verdict): a stronger one would wait for a post
    -- that holds the row's key share while that post waits for this.
    perform 1 from diaries d where d.id = diary for no key update;
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
            perform log_change(diary, 'entry.deleted', gone.id, gone.user_id);
        end if;
    end loop;
    perform set_app_setting('app.writer', '');
    if forgotten > 0 then
        update diaries d set entry_count = d.entry_count - forgotten where d.id = diary;
    end if;
    return forgotten;
end
$$;

-- The diary's row before the entry's, in the order every writer of the diary takes them.
create or replace function entry_verdict(diary uuid, entry uuid) returns text
    language plpgsql
    set search_path = pg_catalog, public
as $$
declare
    author uuid;
begin
    if app_user_id() is null or not (diary = any (app_diary_ids())) then
        return 'not_found';
    end if;
    perform 1 from diaries d where d.id = diary for no key update;
    select e.user_id into author from entries e where e.diary_id = diary and e.id = entry for update;
    if not found then
        return 'not_found';
    end if;
    return case when author = app_user_id() then 'permitted' else 'forbidden' end;
end
$$;

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
    -- The diary's row before the entry's, in the order every writer of the diary takes them.
    perform 1 from diaries d where d.id = diary for no key update;
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

create or replace function log_edited_entry(diary uuid, entry uuid) returns void
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    author uuid;
    alias uuid;
begin
    select e.user_id, m.alias_id into author, alias
    from entries e left join diary_members m on m.diary_id = e.diary_id and m.user_id = e.user_id
    where e.diary_id = diary and e.id = entry;
    if found then
        perform log_change(diary, 'entry.updated', entry, author, alias);
    end if;
end
$$;

create or replace function rename_diary(diary uuid, name text) returns text
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
        perform log_change(diary, 'diary.updated');
    end if;
    return 'renamed';
end
$$;

create or replace function post_entry_as(
    author uuid, diary_id uuid, id uuid, content text, question text default null, images text[] default '{}',
    created_at timestamptz default null
) returns boolean
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    posted_at timestamptz;
    alias uuid;
    logged bigint;
begin
    perform set_app_setting('app.writer', 'post_entry');
    insert into entries as e (diary_id, id, user_id, content, question, images, created_at)
    values (post_entry_as.diary_id, post_entry_as.id, author, post_entry_as.content, post_entry_as.question,
        coalesce(post_entry_as.images, '{}'), coalesce(post_entry_as.created_at, now()))
    on conflict on constraint entries_pkey do nothing
    returning e.created_at into posted_at;
    perform set_app_setting('app.writer', '');
    if posted_at is null then
        return false;
    end if;
    -- One update of the diary's row: the count, and the change's position.
    update diaries d set entry_count = d.entry_count + 1, change_position = d.change_position + 1
    where d.id = post_entry_as.diary_id
    returning d.change_position into logged;
    update diary_members m set unread_count = m.unread_count + 1
    where m.diary_id = post_entry_as.diary_id and m.user_id <> author;
    select m.alias_id into alias from diary_members m where m.diary_id = post_entry_as.diary_id and m.user_id = author;
    perform log_change_at(post_entry_as.diary_id, logged, 'entry.created', post_entry_as.id, author, alias);
    insert into push_outbox (user_id, device_token, kind, diary_id, entry_id, payload)
    select m.user_id, dv.token, 'entry', post_entry_as.diary_id, post_entry_as.id,
        jsonb_build_object(
            'aps', jsonb_build_object(
                'alert', jsonb_build_object('title', '新しい日記', 'body', author_name || 'さんが日記を書きました'),
                'sound', 'default',
                'thread-id', post_entry_as.diary_id::text),
            'diaryId', post_entry_as.diary_id::text,
            'entryId', post_entry_as.id::text)
    from push_author_name(post_entry_as.diary_id, author) author_name
    join diary_members m on m.diary_id = post_entry_as.diary_id and m.user_id <> author
    join users u on u.id = m.user_id and coalesce((u.settings ->> 'notification_new_entry')::boolean, true)
    join devices dv on dv.user_id = m.user_id
    where author_name is not null
    order by m.user_id, dv.token;
    if found then
        perform announce('push_outbox');
    end if;
    return true;
end
$$;

create or replace function mark_as_read_as(reader uuid, diary_id uuid, entry_id uuid, read_at timestamptz default null) returns timestamptz
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    author uuid;
    alias uuid;
    marked_at timestamptz;
    first_read boolean;
begin
    -- The diary's row first, as every writer of the diary takes it; then the entry, so that a
    -- read racing the entry's deletion answers not found instead of failing the foreign key.
    perform 1 from diaries d where d.id = mark_as_read_as.diary_id for no key update;
    select e.user_id, m.alias_id into author, alias
    from entries e join diary_members m on m.diary_id = e.diary_id and m.user_id = reader
    where e.diary_id = mark_as_read_as.diary_id and e.id = mark_as_read_as.entry_id
    for key share of e;
    if not found then
        raise exception 'entry not found among the diaries of this user' using errcode = 'ZN003';
    end if;
    perform set_app_setting('app.writer', 'mark_as_read');
    insert into entry_reads as r (diary_id, entry_id, user_id, read_at)
    values (mark_as_read_as.diary_id, mark_as_read_as.entry_id, reader, coalesce(mark_as_read_as.read_at, now()))
    on conflict on constraint entry_reads_pkey do update set read_at = excluded.read_at
    returning r.read_at, r.xmax = 0 into marked_at, first_read;
    perform set_app_setting('app.writer', '');
    if first_read then
        if author <> reader then
            update diary_members m set unread_count = m.unread_count - 1
            where m.diary_id = mark_as_read_as.diary_id and m.user_id = reader;
        end if;
        perform log_change(mark_as_read_as.diary_id, 'entry.read', mark_as_read_as.entry_id, reader, alias);
    end if;
    return marked_at;
end
$$;

-- ---------------------------------------------------------------- the readers

-- The caller's diaries, with where each began for them: a cursor that does not name one
-- starts there.
create function my_positions_at_join() returns table (diary_id uuid, position_at_join bigint)
    language plpgsql stable security definer
    set search_path = pg_catalog, public
as $$
begin
    return query select u.diary_id, u.position_at_join from user_diaries u where u.user_id = app_user_id();
end
$$;
revoke all on function my_positions_at_join() from public;
grant execute on function my_positions_at_join() to diary_app;

-- For the servers' feeds: the diaries of the users whose sockets they hold, and who of
-- those users is in each.
create function diaries_of_users(users uuid[]) returns table (diary_id uuid, user_ids uuid[])
    language plpgsql stable security definer
    set search_path = pg_catalog, public
as $$
begin
    return query select u.diary_id, array_agg(u.user_id) from user_diaries u where u.user_id = any (users) group by u.diary_id;
end
$$;
revoke all on function diaries_of_users(uuid[]) from public;
grant execute on function diaries_of_users(uuid[]) to diary_app;

-- For the servers' feeds: who of these users is in each of these diaries, after a NOTIFY
-- that named a change of members.
create function members_of_diaries(diaries uuid[], users uuid[]) returns table (diary_id uuid, user_ids uuid[])
    language plpgsql stable security definer
    set search_path = pg_catalog, public
as $$
begin
    return query select u.diary_id, array_agg(u.user_id) from user_diaries u
        where u.diary_id = any (diaries) and u.user_id = any (users) group by u.diary_id;
end
$$;
revoke all on function members_of_diaries(uuid[], uuid[]) from public;
grant execute on function members_of_diaries(uuid[], uuid[]) to diary_app;

-- For the servers' feeds: each diary's position now. No content: each socket then reads
-- its own changes under its own policies.
create function change_positions(diaries uuid[]) returns table (diary_id uuid, change_position bigint)
    language plpgsql stable security definer
    set search_path = pg_catalog, public
as $$
begin
    return query select d.id, d.change_position from diaries d where d.id = any (diaries);
end
$$;
revoke all on function change_positions(uuid[]) from public;
grant execute on function change_positions(uuid[]) to diary_app;

-- Removes changes older than max(older_than, 30 days), unless another server is pruning
-- right now: in each diary the oldest ones, up to the first that is younger, so that what
-- is left after pruned_position is whole. Stops after about max_rows. Returns how many.
create function prune_change_log(older_than interval, max_rows integer) returns integer
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    cutoff constant timestamptz := now() - greatest(older_than, interval '30 days');
    aged record;
    through bigint;
    deleted integer;
    removed integer := 0;
begin
    if not pg_try_advisory_xact_lock(hashtext('prune_change_log')) then
        return 0;
    end if;
    for aged in select c.diary_id from change_log c where c.at < cutoff group by c.diary_id loop
        exit when removed >= max_rows;
        select coalesce(min(c.position) filter (where c.at >= cutoff) - 1, max(c.position)) into through
        from change_log c where c.diary_id = aged.diary_id;
        delete from change_log c where c.diary_id = aged.diary_id and c.position <= through;
        get diagnostics deleted = row_count;
        update diaries d set pruned_position = through where d.id = aged.diary_id and d.pruned_position < through;
        removed := removed + deleted;
    end loop;
    return removed;
end
$$;
revoke all on function prune_change_log(interval, integer) from public;
grant execute on function prune_change_log(interval, integer) to diary_app;

comment on table change_log is
    'What changed in each diary, in the diary''s order (position, from diaries.change_position), for realtime frames and delta sync; pruned by age (diaries.pruned_position).';
comment on column diaries.change_position is
    'The position of the diary''s last change in change_log; taken under the row''s lock by log_change and post_entry_as.';
comment on column diaries.pruned_position is
    'The highest position prune_change_log removed from this diary: a cursor below it gets a resync.';
comment on column user_diaries.position_at_join is
    'The diary''s position just before this member joined: where a cursor that does not name the diary starts.';
comment on function diaries_per_user_cap() is
    'How many diaries a user may belong to (ZN007 beyond): each is a position in their realtime cursor.';
comment on function log_change_at(uuid, bigint, text, uuid, uuid, uuid) is
    'Appends a change at a position the caller took on the diary''s row, and announces diary_changes.';
comment on function log_change(uuid, text, uuid, uuid, uuid) is
    'Takes the diary''s next position under its row lock and appends the change there (log_change_at); null when the diary is gone. The only way a change is logged but for post_entry_as, which takes the position with its count.';
comment on function my_positions_at_join() is
    'The caller''s diaries, each with the position before they joined it.';
comment on function diaries_of_users(uuid[]) is
    'For the servers'' realtime feeds: the diaries of these users, with who of them is in each.';
comment on function members_of_diaries(uuid[], uuid[]) is
    'For the servers'' realtime feeds: who of these users is in each of these diaries.';
comment on function announce(text, text) is
    'Like announce(channel): the NOTIFY sent after the COMMIT carries payload; identical ones fold.';
comment on function change_positions(uuid[]) is
    'For the servers'' realtime feeds: the current position of each of these diaries.';
comment on function prune_change_log(interval, integer) is
    'Removes changes older than older_than, never younger than 30 days, diary by diary up to the first younger one, unless another server is pruning; records pruned_position; stops after about max_rows and returns how many it removed.';
