-- What a transaction changed is announced once it has committed, and only then: the
-- functions that log a change or queue a notification name the channel with announce(), in
-- a session setting that a rollback undoes, and the server's statement after the COMMIT,
-- announce_pending(), sends those NOTIFYs and clears it. A write that changed nothing (a
-- repeated join, a second read) wakes no worker.
--
-- The writer that refuse_direct_write looks for is set with set_app_setting, which on Citus
-- is a SET LOCAL that reaches every node the transaction uses: a set_config stays on the
-- coordinator, and the guard on a worker's shard would refuse the function's own write.

create function announce(channel text) returns void
    language plpgsql
    set search_path = pg_catalog
as $$
declare
    pending text[] := coalesce(string_to_array(nullif(current_setting('app.announce', true), ''), ','), '{}');
begin
    if not channel = any (pending) then
        -- For the session, not the transaction: announce_pending runs after the COMMIT.
        perform set_config('app.announce', array_to_string(pending || channel, ','), false);
    end if;
end
$$;

create function announce_pending() returns void
    language plpgsql
    set search_path = pg_catalog
as $$
declare
    channel text;
begin
    foreach channel in array coalesce(string_to_array(nullif(current_setting('app.announce', true), ''), ','), '{}') loop
        perform pg_notify(channel, '');
    end loop;
    perform set_config('app.announce', '', false);
end
$$;
grant execute on function announce_pending() to diary_app;

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
    update diaries d set entry_count = d.entry_count + 1 where d.id = post_entry_as.diary_id;
    update diary_members m set unread_count = m.unread_count + 1
    where m.diary_id = post_entry_as.diary_id and m.user_id <> author;
    select m.alias_id into alias from diary_members m where m.diary_id = post_entry_as.diary_id and m.user_id = author;
    insert into change_log (diary_id, kind, entry_id, user_id, user_alias)
    values (post_entry_as.diary_id, 'entry.created', post_entry_as.id, author, alias);
    perform announce('diary_changes');
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

create or replace function log_entry_changes() returns trigger
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
begin
    -- Entries that go with their diary are not logged one by one: nobody is left to tell.
    insert into change_log (diary_id, kind, entry_id, user_id)
    select c.diary_id, 'entry.deleted', c.id, c.user_id
    from changed c
    where exists (select 1 from diaries d where d.id = c.diary_id);
    if found then
        perform announce('diary_changes');
    end if;
    return null;
end
$$;

create or replace function public.log_edited_entry() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    insert into change_log (diary_id, kind, entry_id, user_id, user_alias)
    values (new.diary_id, 'entry.updated', new.id, new.user_id,
        (select m.alias_id from diary_members m where m.diary_id = new.diary_id and m.user_id = new.user_id));
    perform announce('diary_changes');
    return null;
end
$$;

create or replace function public.log_membership_changes() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    insert into change_log (diary_id, kind, user_id, user_alias)
    select c.diary_id, case tg_op when 'INSERT' then 'member.joined' else 'member.left' end, c.user_id, c.alias_id
    from changed c order by c.joined_at, c.user_id;
    if found then
        perform announce('diary_changes');
    end if;
    return null;
end
$$;

create or replace function public.log_renamed_diary() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    insert into change_log (diary_id, kind) values (new.id, 'diary.updated');
    perform announce('diary_changes');
    return null;
end
$$;

comment on function announce(text) is
    'Names a channel to NOTIFY once the transaction has committed (a session setting, which a rollback undoes); announce_pending sends it.';
comment on function announce_pending() is
    'Run by the server after its COMMIT, in the same round trip: NOTIFYs each channel the transaction announced, and clears them. A NOTIFY inside the transaction would hold its commit behind the lock every notifying commit takes.';
