-- Counters that keep every everyday request's cost independent of a diary's history.
--
-- A member's unread count (entries by others that they have no read receipt for) was an
-- anti-join over every entry of the diary, on every home-screen load. It is now a column,
-- diary_members.unread_count, kept exact by triggers in the transactions that change it:
--   an entry is posted        every other member +1
--   an entry is deleted       every other member who had not read it -1, then its receipts go
--   a first read receipt      the reader -1, unless it is their own entry (a second read
--                             updates read_at and inserts nothing)
--   a member joins            entry_count - their own entries - their receipts on others' entries
--   a member leaves           their row goes; nobody else's count changes
-- diaries.entry_count serves the join. `diary-server check-counters` recomputes both from
-- scratch and can repair them.
--
-- Lock order: a diary's row, then its members' rows. Posting and deleting update the diary
-- row first; join_diary and remove_diary_member lock it first; delete_my_account locks every
-- diary of the caller first. So a join either sees a concurrent entry in entry_count or is
-- seen by that entry's +1, and no two of these deadlock.
--
-- last_entry_at stays a read of entries_timeline (one index probe), member_count the length
-- of the member list that the same query builds anyway.

-- Writers wait while the counters are filled, so that none is missed.
lock table diaries, diary_members, entries, entry_reads in share row exclusive mode;

alter table diaries add column entry_count integer not null default 0;
alter table diary_members add column unread_count integer not null default 0;

-- Every post updates its diary's row and its members' rows: room on each page keeps those
-- updates HOT (no new index entries), and pruning then reclaims the old versions in place.
alter table diaries set (fillfactor = 70);
alter table diary_members set (fillfactor = 50);

-- The counters change on every post; only the diary's own fields move updated_at.
drop trigger diaries_set_updated_at on diaries;
create trigger diaries_set_updated_at before update of name, invite_code, settings on diaries
    for each row execute function set_updated_at();

-- Only a change of role can change who owns the diary.
drop trigger diary_members_exactly_one_owner on diary_members;
create constraint trigger diary_members_exactly_one_owner
    after insert or update of role or delete on diary_members
    deferrable initially deferred
    for each row execute function check_diary_has_one_owner();

-- An entry or a receipt never moves to another diary, author or reader: the counters
-- account for each under its keys. After the row is checked, so that the row-level
-- policies, which refuse such moves to the server's role, answer first (42501).
create function forbid_key_change() returns trigger
language plpgsql
set search_path = pg_catalog, public
as $$
begin
    raise exception 'the keys of % cannot change', tg_table_name using errcode = '23514', constraint = tg_name;
end
$$;

create trigger entries_keys_fixed after update of diary_id, id, user_id on entries
    for each row when (old.diary_id is distinct from new.diary_id or old.id is distinct from new.id or old.user_id is distinct from new.user_id)
    execute function forbid_key_change();
create trigger entry_reads_keys_fixed after update of diary_id, entry_id, user_id on entry_reads
    for each row when (old.diary_id is distinct from new.diary_id or old.entry_id is distinct from new.entry_id or old.user_id is distinct from new.user_id)
    execute function forbid_key_change();

-- The counting triggers run once per statement, over its transition table: a statement
-- that inserts or deletes many rows (an account's deletion, a diary's, a bulk load) updates
-- each counter row once. A row updated n times in one transaction keeps n versions that
-- each update walks, so a trigger per row would make such statements quadratic.
create function count_posted_entries() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    update diaries d set entry_count = d.entry_count + posted.count
    from (select p.diary_id, count(*)::integer as count from posted p group by p.diary_id) posted
    where d.id = posted.diary_id;
    update diary_members m set unread_count = m.unread_count + unread.count
    from (
        select p.diary_id, other.user_id, count(*)::integer as count
        from posted p join diary_members other on other.diary_id = p.diary_id and other.user_id <> p.user_id
        group by p.diary_id, other.user_id
    ) unread
    where m.diary_id = unread.diary_id and m.user_id = unread.user_id;
    return null;
end
$$;

create trigger entries_count_posted after insert on entries
    referencing new table as posted
    for each statement execute function count_posted_entries();

-- The entries' receipts go here too, after the counts that need them: the foreign key from
-- entry_reads no longer cascades (it is checked at commit instead), because a cascade
-- deletes them one entry at a time.
create function count_deleted_entries() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    update diaries d set entry_count = d.entry_count - gone.count
    from (select g.diary_id, count(*)::integer as count from gone g group by g.diary_id) gone
    where d.id = gone.diary_id;
    update diary_members m set unread_count = m.unread_count - unread.count
    from (
        select g.diary_id, other.user_id, count(*)::integer as count
        from gone g join diary_members other on other.diary_id = g.diary_id and other.user_id <> g.user_id
        where not exists (
            select 1 from entry_reads r
            where r.diary_id = g.diary_id and r.entry_id = g.id and r.user_id = other.user_id)
        group by g.diary_id, other.user_id
    ) unread
    where m.diary_id = unread.diary_id and m.user_id = unread.user_id;
    delete from entry_reads r using gone g where r.diary_id = g.diary_id and r.entry_id = g.id;
    return null;
end
$$;

create trigger entries_count_deleted after delete on entries
    referencing old table as gone
    for each statement execute function count_deleted_entries();

alter table entry_reads drop constraint entry_reads_diary_id_entry_id_fkey;
alter table entry_reads add constraint entry_reads_diary_id_entry_id_fkey
    foreign key (diary_id, entry_id) references entries (diary_id, id) deferrable initially deferred;

create function count_first_reads() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    update diary_members m set unread_count = m.unread_count - readers.count
    from (
        select r.diary_id, r.user_id, count(*)::integer as count
        from receipts r join entries e on e.diary_id = r.diary_id and e.id = r.entry_id
        where e.user_id <> r.user_id
        group by r.diary_id, r.user_id
    ) readers
    where m.diary_id = readers.diary_id and m.user_id = readers.user_id;
    return null;
end
$$;

-- Inserts only: a second read updates read_at (on conflict) and inserts nothing.
create trigger entry_reads_count_first_read after insert on entry_reads
    referencing new table as receipts
    for each statement execute function count_first_reads();

-- A newcomer's own entries and receipts are none; one who comes back finds theirs again.
create function count_unread_for_new_member() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    entries_in_diary integer;
begin
    -- Shared: posts, which update this row first, wait until the member is in.
    select d.entry_count into entries_in_diary from diaries d where d.id = new.diary_id for share;
    new.unread_count := coalesce(entries_in_diary, 0)
        - (select count(*) from entries e where e.user_id = new.user_id and e.diary_id = new.diary_id)
        - (select count(*) from entry_reads r
           join entries e on e.diary_id = r.diary_id and e.id = r.entry_id
           where r.user_id = new.user_id and r.diary_id = new.diary_id and e.user_id <> new.user_id);
    return new;
end
$$;

create trigger diary_members_count_unread before insert on diary_members
    for each row execute function count_unread_for_new_member();

-- The newcomer's counts above, and the cascades of an account's deletion, look up one
-- user's rows in one diary.
create index entries_user_diary on entries (user_id, diary_id);
drop index entries_user;
create index entry_reads_user_diary on entry_reads (user_id, diary_id);
drop index entry_reads_user;

-- As before, and every diary of the caller is locked first, in one order: the cascades
-- below update diary rows and member rows, which concurrent posts update in that order.
create or replace function delete_my_account() returns void
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := (select app_user_id());
    owned record;
    heir uuid;
begin
    if caller is null then
        raise exception 'no caller' using errcode = 'ZN401';
    end if;
    perform 1 from diaries d
    where d.id in (select m.diary_id from diary_members m where m.user_id = caller)
    order by d.id
    for update;
    for owned in
        select m.diary_id from diary_members m where m.user_id = caller and m.role = 'owner' order by m.diary_id
    loop
        delete from diary_members m where m.diary_id = owned.diary_id and m.user_id = caller;
        select m.user_id into heir from diary_members m
        where m.diary_id = owned.diary_id order by m.joined_at, m.user_id limit 1;
        if heir is null then
            delete from diaries d where d.id = owned.diary_id;
        else
            update diary_members m set role = 'owner' where m.diary_id = owned.diary_id and m.user_id = heir;
        end if;
    end loop;
    delete from users u where u.id = caller;
end
$$;

-- As before, and the entry is locked while its receipt is written, as the foreign key
-- check would lock it anyway: a read that waits for the entry's deletion then finds no
-- entry (ZN003, a 404) instead of failing that check (a 409), and a deletion that waits
-- for the read then finds its receipt.
create or replace function mark_as_read(entry_id uuid, user_id uuid) returns timestamptz
language plpgsql
set search_path = pg_catalog, public
as $$
declare
    marked_at timestamptz;
begin
    with marked as (
        insert into entry_reads (diary_id, entry_id, user_id, read_at)
        select e.diary_id, e.id, mark_as_read.user_id, now()
        from entries e
        join diary_members m on m.diary_id = e.diary_id and m.user_id = mark_as_read.user_id
        where e.id = mark_as_read.entry_id
        for key share of e
        on conflict on constraint entry_reads_pkey do update set read_at = excluded.read_at
        returning entry_reads.read_at
    )
    select max(marked.read_at) into marked_at from marked;
    if marked_at is null then
        raise exception 'entry not found among the diaries of this user' using errcode = 'ZN003';
    end if;
    return marked_at;
end
$$;

revoke all on function forbid_key_change(), count_posted_entries(), count_deleted_entries(), count_first_reads(), count_unread_for_new_member() from public;

-- The counters' definitions, counted from scratch: each counter that differs, with what it
-- holds and what it should hold. `diary-server check-counters` reads and repairs through it,
-- as the owner, whose BYPASSRLS lets it see every diary; the server's role has no access.
create view counter_differences with (security_invoker = true) as
    select 'unread_count' as counter, m.diary_id, m.user_id, m.unread_count as stored, actual.count as actual
    from diary_members m
    cross join lateral (
        select count(*)::integer as count from entries e
        where e.diary_id = m.diary_id and e.user_id <> m.user_id
          and not exists (select 1 from entry_reads r where r.diary_id = e.diary_id and r.entry_id = e.id and r.user_id = m.user_id)
    ) actual
    where m.unread_count <> actual.count
    union all
    select 'entry_count', d.id, null::uuid, d.entry_count, actual.count
    from diaries d
    cross join lateral (select count(*)::integer as count from entries e where e.diary_id = d.id) actual
    where d.entry_count <> actual.count;
revoke all on counter_differences from public;

-- The existing rows' counts, as `check-counters --repair` sets them.
update diary_members m set unread_count = m.unread_count + (fix.actual - fix.stored)
from counter_differences fix
where fix.counter = 'unread_count' and m.diary_id = fix.diary_id and m.user_id = fix.user_id;
update diaries d set entry_count = d.entry_count + (fix.actual - fix.stored)
from counter_differences fix
where fix.counter = 'entry_count' and d.id = fix.diary_id;
