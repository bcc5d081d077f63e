-- Writes no longer NOTIFY inside their transaction: PostgreSQL serialises every commit that
-- notifies behind one lock held through its WAL flush, which halved POST entry's throughput.
-- The server announces after COMMIT, in the same round trip (DiaryCore/Workers/Announcement);
-- what nobody announces (an operator's psql) the workers' polls find.

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
    return null;
end
$$;

create or replace function public.log_renamed_diary() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    insert into change_log (diary_id, kind) values (new.id, 'diary.updated');
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
    return null;
end
$$;

comment on function log_entry_changes() is
    'Statement trigger: logs posted (entry.created) and deleted (entry.deleted) entries in change_log. Entries that go with their diary are not logged one by one: nobody is left to tell.';
comment on function log_edited_entry() is
    'Trigger: logs entry.updated when an entry''s content, question or images change, the changes its readers can see.';
comment on function log_first_reads() is
    'Statement trigger: logs each first read (entry.read) with the reader''s alias; a second read inserts no receipt and logs nothing.';
comment on function log_membership_changes() is
    'Statement trigger: logs member.joined and member.left with the member''s alias, which is kept because a departed member''s row and alias are gone.';
comment on function queue_entry_notifications() is
    'Statement trigger on new entries: queues a push_outbox row for each device of every other member who wants new-entry notifications, in the posting transaction, so that a rolled-back entry sends nothing and a crash loses nothing.';
