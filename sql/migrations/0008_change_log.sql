-- The change log: every change a member can observe, appended by triggers in the
-- transaction that makes it. The realtime socket, delta sync and the cursors that REST
-- reads return all read this one table.
--
-- Order. A change's position is (xact, seq): the id of the transaction that made it, then
-- a sequence number. Sequence numbers alone become visible out of order (T1 takes 10, T2
-- takes 11, T2 commits first). Readers therefore read only changes whose transaction is
-- older than their snapshot's xmin: every such transaction has finished, so nothing can
-- later appear below that line. A transaction that finishes later has an id at or above
-- the old xmin, so its changes sort after everything already read. A reader that resumes
-- after the last position it got, or after (xmin, 0), misses nothing and repeats nothing.
--
-- Content. A row holds keys only (the entry, the member); what a receiver sees is read at
-- delivery under their own row-level policies, so it is never stored twice and does not
-- outlive its deletion here. The member's alias is kept, because after they leave, their
-- membership row, and its alias, are gone.
--
-- Wake-up. Each logging statement notifies 'diary_changes' with an empty payload
-- (PostgreSQL folds repeats within a transaction). A lost notification only delays: the
-- servers also poll the log's tail.
--
-- Retention. prune_change_log removes changes older than 30 days (never younger), a
-- batch at a time, and records the highest position removed in change_log_horizon: a
-- cursor below it may have missed changes, and is answered with a resync.

create table change_log (
    diary_id uuid not null,
    xact xid8 not null default pg_current_xact_id(),
    seq bigint generated always as identity,
    kind text not null check (kind in (
        'entry.created', 'entry.updated', 'entry.deleted', 'entry.read', 'member.joined', 'member.left', 'diary.updated')),
    -- The entry, for entry.*; null otherwise.
    entry_id uuid,
    -- The author, reader, or member who joined or left; null for diary.updated.
    user_id uuid,
    -- user_id's alias in the diary when the change was made.
    user_alias uuid,
    at timestamptz not null default now(),
    primary key (diary_id, xact, seq)
);

-- The servers' tail of the whole log, and pruning by age.
create index change_log_tail on change_log (xact, seq);
create index change_log_at on change_log (at);
-- A member who left finds their own departure after losing sight of the diary.
create index change_log_departures on change_log (user_id, xact, seq) where kind = 'member.left';

create table change_log_horizon (
    singleton boolean primary key default true check (singleton),
    xact xid8 not null,
    seq bigint not null
);
insert into change_log_horizon (xact, seq) values ('0', 0);

-- Members see their diaries' changes; a member who left sees their own departure.
alter table change_log enable row level security;
alter table change_log force row level security;
create policy change_log_select on change_log for select using (
    (diary_id = any ((select app_diary_ids())::uuid[])) is true
    or (kind = 'member.left' and user_id = (select app_user_id())));
create policy change_log_insert on change_log for insert with check (false);
create policy change_log_update on change_log for update using (false) with check (false);
create policy change_log_delete on change_log for delete using (false);

alter table change_log_horizon enable row level security;
alter table change_log_horizon force row level security;
create policy change_log_horizon_select on change_log_horizon for select using (true);
create policy change_log_horizon_insert on change_log_horizon for insert with check (false);
create policy change_log_horizon_update on change_log_horizon for update using (false) with check (false);
create policy change_log_horizon_delete on change_log_horizon for delete using (false);

-- Posts and deletions, once per statement over its transition table.
create function log_entry_changes() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    if tg_op = 'INSERT' then
        insert into change_log (diary_id, kind, entry_id, user_id, user_alias)
        select c.diary_id, 'entry.created', c.id, c.user_id, m.alias_id
        from changed c left join diary_members m on m.diary_id = c.diary_id and m.user_id = c.user_id
        order by c.created_at, c.id;
    else
        -- Entries that go with their diary are not logged one by one: nobody is left to tell.
        insert into change_log (diary_id, kind, entry_id, user_id)
        select c.diary_id, 'entry.deleted', c.id, c.user_id
        from changed c
        where exists (select 1 from diaries d where d.id = c.diary_id);
    end if;
    perform pg_notify('diary_changes', '');
    return null;
end
$$;

create trigger entries_log_created after insert on entries
    referencing new table as changed
    for each statement execute function log_entry_changes();
create trigger entries_log_deleted after delete on entries
    referencing old table as changed
    for each statement execute function log_entry_changes();

-- Edits come one row at a time; only a change that readers can see is logged.
create function log_edited_entry() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    insert into change_log (diary_id, kind, entry_id, user_id, user_alias)
    values (new.diary_id, 'entry.updated', new.id, new.user_id,
        (select m.alias_id from diary_members m where m.diary_id = new.diary_id and m.user_id = new.user_id));
    perform pg_notify('diary_changes', '');
    return null;
end
$$;

create trigger entries_log_updated after update of content, question, images on entries
    for each row when ((old.content, old.question, old.images) is distinct from (new.content, new.question, new.images))
    execute function log_edited_entry();

-- First reads only: a second read moves read_at (on conflict) and inserts nothing.
create function log_first_reads() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    insert into change_log (diary_id, kind, entry_id, user_id, user_alias)
    select r.diary_id, 'entry.read', r.entry_id, r.user_id, m.alias_id
    from receipts r left join diary_members m on m.diary_id = r.diary_id and m.user_id = r.user_id
    order by r.read_at, r.entry_id;
    perform pg_notify('diary_changes', '');
    return null;
end
$$;

create trigger entry_reads_log_first_read after insert on entry_reads
    referencing new table as receipts
    for each statement execute function log_first_reads();

create function log_membership_changes() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    insert into change_log (diary_id, kind, user_id, user_alias)
    select c.diary_id, case tg_op when 'INSERT' then 'member.joined' else 'member.left' end, c.user_id, c.alias_id
    from changed c order by c.joined_at, c.user_id;
    perform pg_notify('diary_changes', '');
    return null;
end
$$;

create trigger diary_members_log_joined after insert on diary_members
    referencing new table as changed
    for each statement execute function log_membership_changes();
create trigger diary_members_log_left after delete on diary_members
    referencing old table as changed
    for each statement execute function log_membership_changes();

-- Every post updates its diary's row (entry_count): only a new name is logged.
create function log_renamed_diary() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    insert into change_log (diary_id, kind) values (new.id, 'diary.updated');
    perform pg_notify('diary_changes', '');
    return null;
end
$$;

create trigger diaries_log_renamed after update of name on diaries
    for each row when (old.name is distinct from new.name)
    execute function log_renamed_diary();


-- The servers' tail: whom each change may concern (the diary's members, and the one who
-- left), for waking their sockets. No content: each socket then reads its own changes under
-- its own policies. The last row carries the reading snapshot's xmin, even when no change
-- is returned.
create function change_log_tail(after_xact xid8, after_seq bigint, max_rows integer)
returns table (xact xid8, seq bigint, users uuid[], horizon xid8)
language sql stable security definer
set search_path = pg_catalog, public
as $$
    with snapshot as (select pg_snapshot_xmin(pg_current_snapshot()) as xmin)
    select c.xact, c.seq,
        array(select m.user_id from diary_members m where m.diary_id = c.diary_id
              union select c.user_id where c.user_id is not null),
        snapshot.xmin
    from snapshot
    left join lateral (
        select c.* from change_log c
        where (c.xact, c.seq) > (after_xact, after_seq) and c.xact < snapshot.xmin
        order by c.xact, c.seq
        limit least(max_rows, 10000)) c on true
    order by c.xact, c.seq
$$;

-- Of these sessions, those still live: sockets close when theirs is revoked or deleted.
create function live_sessions(ids uuid[]) returns setof uuid
language sql stable security definer
set search_path = pg_catalog, public
as $$
    select s.id from sessions s where s.id = any (ids) and s.revoked_at is null
$$;

-- Removes up to max_rows changes older than max(older_than, 30 days), unless another
-- server is pruning right now. Returns how many it removed.
create function prune_change_log(older_than interval, max_rows integer) returns integer
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    removed integer;
begin
    if not pg_try_advisory_xact_lock(hashtext('prune_change_log')) then
        return 0;
    end if;
    with gone as (
        delete from change_log c
        where (c.diary_id, c.xact, c.seq) in (
            select o.diary_id, o.xact, o.seq from change_log o
            where o.at < now() - greatest(older_than, interval '30 days')
            order by o.at limit greatest(max_rows, 0))
        returning c.xact, c.seq
    ), highest as (
        select g.xact, g.seq from gone g order by g.xact desc, g.seq desc limit 1
    ), moved as (
        update change_log_horizon h set xact = highest.xact, seq = highest.seq
        from highest where (highest.xact, highest.seq) > (h.xact, h.seq)
    )
    select count(*) into removed from gone;
    return removed;
end
$$;

revoke execute on function log_entry_changes(), log_edited_entry(), log_first_reads(), log_membership_changes(), log_renamed_diary(),
    change_log_tail(xid8, bigint, integer), live_sessions(uuid[]), prune_change_log(interval, integer) from public;
grant select on change_log, change_log_horizon to diary_app;
grant execute on function change_log_tail(xid8, bigint, integer), live_sessions(uuid[]), prune_change_log(interval, integer) to diary_app;
