-- An entry is posted by post_entry, which makes the post's side effects itself, in the same
-- transaction: the diary's entry_count, the other members' unread_count, the change log and
-- the push outbox. Three statement triggers over transition tables made them before; Citus
-- cannot run a trigger with effects on other tables, and the triggers cost more than the
-- statements they ran. No one inserts into entries directly: entries_posted_by_post_entry
-- refuses it, so that no path skips the side effects. The writer it looks for is set with
-- set_app_setting, which on Citus is a SET LOCAL that reaches every node the transaction
-- uses: a set_config stays on the coordinator, where the guard on a shard cannot see it.

create function post_entry_as(
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
revoke all on function post_entry_as(uuid, uuid, uuid, text, text, text[], timestamptz) from public;

create function post_entry(diary_id uuid, id uuid, content text, question text, images text[]) returns boolean
    language plpgsql security definer
    set search_path = pg_catalog, public
as $$
begin
    -- What entries_insert checked: the caller posts as themselves, in one of their diaries.
    if app_user_id() is null or not (post_entry.diary_id = any (app_diary_ids())) then
        return false;
    end if;
    return post_entry_as(app_user_id(), post_entry.diary_id, post_entry.id, post_entry.content, post_entry.question, post_entry.images);
end
$$;
revoke all on function post_entry(uuid, uuid, text, text, text[]) from public;
grant execute on function post_entry(uuid, uuid, text, text, text[]) to diary_app;

create function refuse_direct_write() returns trigger
    language plpgsql
    set search_path = pg_catalog, public
as $$
begin
    if current_setting('app.writer', true) is distinct from tg_argv[0] then
        raise exception '% on % is made only by %(), which keeps its counters, change log and notifications', tg_op, tg_table_name, tg_argv[0]
            using errcode = 'insufficient_privilege';
    end if;
    return null;
end
$$;

drop trigger entries_count_posted on entries;
drop trigger entries_log_created on entries;
drop trigger entries_queue_notifications on entries;
drop function count_posted_entries();
drop function queue_entry_notifications();
create trigger entries_posted_by_post_entry before insert on entries
    for each statement execute function refuse_direct_write('post_entry');

-- log_entry_changes now logs only deletions.
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

alter policy entries_insert on entries with check (false);

comment on function post_entry_as(uuid, uuid, uuid, text, text, text[], timestamptz) is
    'Posts an entry as author, for operators and seeds (not granted to diary_app): inserts it unless its id exists (false then), and in the same transaction counts it in the diary''s entry_count and the other members'' unread_count, logs entry.created and queues the push notifications of the members who want them.';
comment on function post_entry(uuid, uuid, text, text, text[]) is
    'POST entry: post_entry_as for the caller, in one of their diaries (else false, nothing tried). The only way a request adds an entry.';
comment on function refuse_direct_write() is
    'Statement trigger: refuses a write to its table unless the function named in its argument makes it (app.writer), so that no path, not even an operator''s psql, skips the side effects that function makes.';
comment on function log_entry_changes() is
    'Statement trigger on deleted entries: logs entry.deleted in change_log and announces diary_changes. Entries that go with their diary are not logged one by one: nobody is left to tell.';
