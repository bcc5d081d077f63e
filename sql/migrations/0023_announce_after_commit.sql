-- Writes no longer NOTIFY inside their transaction: PostgreSQL serialises every commit that
-- notifies behind one lock held through its WAL flush. What a transaction changed is
-- announced once it has committed, and only then: the functions that log a change or queue
-- a notification name the channel with announce(), in a session setting that a rollback
-- undoes, and the server's statement after the COMMIT, announce_pending(), sends those
-- NOTIFYs and clears it (DiaryCore/Workers/Announcement). A write that changed nothing wakes
-- no worker; what nobody announces (an operator's psql) the workers' polls find.

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

create or replace function public.log_entry_changes() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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
    if found then
        perform announce('diary_changes');
    end if;
    return null;
end
$$;

create or replace function public.log_first_reads() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    insert into change_log (diary_id, kind, entry_id, user_id, user_alias)
    select r.diary_id, 'entry.read', r.entry_id, r.user_id, m.alias_id
    from receipts r left join diary_members m on m.diary_id = r.diary_id and m.user_id = r.user_id
    order by r.read_at, r.entry_id;
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

create or replace function public.queue_entry_notifications() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    insert into push_outbox (user_id, device_token, kind, diary_id, entry_id, payload)
    select m.user_id, dv.token, 'entry', c.diary_id, c.id,
        jsonb_build_object(
            'aps', jsonb_build_object(
                'alert', jsonb_build_object('title', '新しい日記', 'body', author.name || 'さんが日記を書きました'),
                'sound', 'default',
                'thread-id', c.diary_id::text),
            'diaryId', c.diary_id::text,
            'entryId', c.id::text)
    from changed c
    cross join lateral (select push_author_name(c.diary_id, c.user_id) as name) author
    join diary_members m on m.diary_id = c.diary_id and m.user_id <> c.user_id
    join users u on u.id = m.user_id and coalesce((u.settings ->> 'notification_new_entry')::boolean, true)
    join devices dv on dv.user_id = m.user_id
    where author.name is not null
    order by c.created_at, c.id, m.user_id, dv.token;
    if found then
        perform announce('push_outbox');
    end if;
    return null;
end
$$;

comment on function log_entry_changes() is
    'Statement trigger: logs posted (entry.created) and deleted (entry.deleted) entries in change_log, and announces diary_changes. Entries that go with their diary are not logged one by one: nobody is left to tell.';
comment on function log_edited_entry() is
    'Trigger: logs entry.updated when an entry''s content, question or images change, the changes its readers can see, and announces diary_changes.';
comment on function log_first_reads() is
    'Statement trigger: logs each first read (entry.read) with the reader''s alias and announces diary_changes; a second read inserts no receipt and logs nothing.';
comment on function log_membership_changes() is
    'Statement trigger: logs member.joined and member.left with the member''s alias, which is kept because a departed member''s row and alias are gone, and announces diary_changes.';
comment on function queue_entry_notifications() is
    'Statement trigger on new entries: queues a push_outbox row for each device of every other member who wants new-entry notifications, in the posting transaction, so that a rolled-back entry sends nothing and a crash loses nothing; announces push_outbox when it queued one.';
comment on function announce(text) is
    'Names a channel to NOTIFY once the transaction has committed (a session setting, which a rollback undoes); announce_pending sends it.';
comment on function announce_pending() is
    'Run by the server after its COMMIT, in the same round trip: NOTIFYs each channel the transaction announced, and clears them. A NOTIFY inside the transaction would hold its commit behind the lock every notifying commit takes.';
