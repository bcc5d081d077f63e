-- A read is recorded by mark_as_read, which makes the first read's side effects itself, in
-- the same transaction: the reader's unread_count and the change log's entry.read. Two
-- statement triggers over transition tables made them before, which Citus cannot run. The
-- diary is named, so that on Citus the read routes to the diary's shard. No one inserts
-- into entry_reads directly: entry_reads_made_by_mark_as_read refuses it.

create function mark_as_read_as(reader uuid, diary_id uuid, entry_id uuid, read_at timestamptz default null) returns timestamptz
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
declare
    author uuid;
    alias uuid;
    marked_at timestamptz;
    first_read boolean;
begin
    -- The entry is locked while its receipt is written, so that a read racing the entry's
    -- deletion answers not found instead of failing the foreign key.
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
        insert into change_log (diary_id, kind, entry_id, user_id, user_alias)
        values (mark_as_read_as.diary_id, 'entry.read', mark_as_read_as.entry_id, reader, alias);
        perform announce('diary_changes');
    end if;
    return marked_at;
end
$$;
revoke all on function mark_as_read_as(uuid, uuid, uuid, timestamptz) from public;

create function mark_as_read(diary_id uuid, entry_id uuid, user_id uuid) returns timestamptz
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
begin
    -- What entry_reads_insert checked: the caller reads as themselves, in one of their diaries.
    if mark_as_read.user_id is distinct from app_user_id() or not (mark_as_read.diary_id = any (app_diary_ids())) then
        raise exception 'entry not found among the diaries of this user' using errcode = 'ZN003';
    end if;
    return mark_as_read_as(mark_as_read.user_id, mark_as_read.diary_id, mark_as_read.entry_id);
end
$$;
revoke all on function mark_as_read(uuid, uuid, uuid) from public;
grant execute on function mark_as_read(uuid, uuid, uuid) to diary_app;

-- The form without the diary, for servers of the previous release during a rolling deploy.
create or replace function mark_as_read(entry_id uuid, user_id uuid) returns timestamptz
    language plpgsql
    set search_path = pg_catalog, public
as $$
begin
    return mark_as_read((select e.diary_id from entries e where e.id = mark_as_read.entry_id), mark_as_read.entry_id, mark_as_read.user_id);
end
$$;

drop trigger entry_reads_count_first_read on entry_reads;
drop trigger entry_reads_log_first_read on entry_reads;
drop function count_first_reads();
drop function log_first_reads();
create trigger entry_reads_made_by_mark_as_read before insert on entry_reads
    for each statement execute function refuse_direct_write('mark_as_read');

alter policy entry_reads_insert on entry_reads with check (false);
alter policy entry_reads_update on entry_reads using (false) with check (false);

comment on function mark_as_read_as(uuid, uuid, uuid, timestamptz) is
    'Records that reader has read the entry (既読), for operators and seeds (not granted to diary_app), refusing anyone outside its diary (ZN003); reading again moves read_at. A first read lowers the reader''s unread_count (unless the reader wrote it) and logs entry.read, in the same transaction. The entry is locked while its receipt is written.';
comment on function mark_as_read(uuid, uuid, uuid) is
    'POST read: mark_as_read_as for the caller (user_id must be app_user_id()), in one of their diaries, else ZN003. The only way a request records a read.';
comment on function mark_as_read(uuid, uuid) is
    'mark_as_read without the diary, found from the entry, for servers of the previous release during a rolling deploy.';
