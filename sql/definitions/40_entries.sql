-- Definitions: entries. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.delete_entry(diary uuid, entry uuid) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

COMMENT ON FUNCTION public.delete_entry(diary uuid, entry uuid) IS 'DELETE entry: the author deletes it through forget_entries. Answers deleted, not_found or forbidden.';

REVOKE ALL ON FUNCTION public.delete_entry(diary uuid, entry uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.delete_entry(diary uuid, entry uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.edit_entry(diary uuid, entry uuid, content text, question text, clear_question boolean) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    verdict constant text := entry_verdict(diary, entry);
begin
    if verdict <> 'permitted' then
        return verdict;
    end if;
    perform set_app_setting('app.writer', 'edit_entry');
    update entries e set content = coalesce(edit_entry.content, e.content),
        question = case when clear_question then null else coalesce(edit_entry.question, e.question) end
    where e.diary_id = diary and e.id = entry
      and (e.content, e.question) is distinct from
          (coalesce(edit_entry.content, e.content), case when clear_question then null else coalesce(edit_entry.question, e.question) end);
    perform set_app_setting('app.writer', '');
    if found then
        perform log_edited_entry(diary, entry);
    end if;
    return 'edited';
end
$$;

COMMENT ON FUNCTION public.edit_entry(diary uuid, entry uuid, content text, question text, clear_question boolean) IS 'PATCH entry: the author changes content and question (a null leaves either as it is; clear_question removes the question, PATCH''s explicit null); entry.updated is logged when something changed. Answers edited, not_found or forbidden.';

REVOKE ALL ON FUNCTION public.edit_entry(diary uuid, entry uuid, content text, question text, clear_question boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.edit_entry(diary uuid, entry uuid, content text, question text, clear_question boolean) TO diary_app;

CREATE OR REPLACE FUNCTION public.forget_entries(diary uuid, ids uuid[], logged boolean) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

COMMENT ON FUNCTION public.forget_entries(diary uuid, ids uuid[], logged boolean) IS 'Deletes entries of one diary with their receipts and photos (queued as photo garbage), takes them off entry_count and the other members'' unread_count, and logs entry.deleted when asked.';

REVOKE ALL ON FUNCTION public.forget_entries(diary uuid, ids uuid[], logged boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.log_edited_entry(diary uuid, entry uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

COMMENT ON FUNCTION public.log_edited_entry(diary uuid, entry uuid) IS 'Logs entry.updated for an entry, with its author''s alias, and announces diary_changes.';

REVOKE ALL ON FUNCTION public.log_edited_entry(diary uuid, entry uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.mark_as_read(diary_id uuid, entry_id uuid, user_id uuid) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    -- What entry_reads_insert checked: the caller reads as themselves, in one of their diaries.
    if mark_as_read.user_id is distinct from app_user_id() or not (mark_as_read.diary_id = any (app_diary_ids())) then
        raise exception 'no such entry' using errcode = 'ZN003';
    end if;
    return mark_as_read_as(mark_as_read.user_id, mark_as_read.diary_id, mark_as_read.entry_id);
end
$$;

COMMENT ON FUNCTION public.mark_as_read(diary_id uuid, entry_id uuid, user_id uuid) IS 'POST read: mark_as_read_as for the caller (user_id must be app_user_id()), in one of their diaries, else ZN003. The only way a request records a read.';

REVOKE ALL ON FUNCTION public.mark_as_read(diary_id uuid, entry_id uuid, user_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.mark_as_read(diary_id uuid, entry_id uuid, user_id uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.mark_as_read_as(reader uuid, diary_id uuid, entry_id uuid, read_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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
        raise exception 'no such entry' using errcode = 'ZN003';
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
    else
        -- A read again moves the receipt's time, which logs nothing but is shown: a former
        -- member may not restore past it (departure_restorable).
        update diaries d set shared_position = d.change_position where d.id = mark_as_read_as.diary_id;
    end if;
    return marked_at;
end
$$;

COMMENT ON FUNCTION public.mark_as_read_as(reader uuid, diary_id uuid, entry_id uuid, read_at timestamp with time zone) IS 'Records that reader has read the entry (既読), for operators and seeds (not granted to diary_app), refusing anyone outside its diary (ZN003); reading again moves read_at. A first read lowers the reader''s unread_count (unless the reader wrote it) and logs entry.read, in the same transaction. The entry is locked while its receipt is written.';

REVOKE ALL ON FUNCTION public.mark_as_read_as(reader uuid, diary_id uuid, entry_id uuid, read_at timestamp with time zone) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.post_entry(diary_id uuid, id uuid, content text, question text, images text[]) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    -- What entries_insert checked: the caller posts as themselves, in one of their diaries.
    if app_user_id() is null or not (post_entry.diary_id = any (app_diary_ids())) then
        return false;
    end if;
    return post_entry_as(app_user_id(), post_entry.diary_id, post_entry.id, post_entry.content, post_entry.question, post_entry.images);
end
$$;

COMMENT ON FUNCTION public.post_entry(diary_id uuid, id uuid, content text, question text, images text[]) IS 'POST entry: post_entry_as for the caller, in one of their diaries (else false, nothing tried). The only way a request adds an entry.';

REVOKE ALL ON FUNCTION public.post_entry(diary_id uuid, id uuid, content text, question text, images text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.post_entry(diary_id uuid, id uuid, content text, question text, images text[]) TO diary_app;

CREATE OR REPLACE FUNCTION public.post_entry_as(author uuid, diary_id uuid, id uuid, content text, question text DEFAULT NULL::text, images text[] DEFAULT '{}'::text[], created_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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
    -- One update of the diary's row: the count, and the change's position, which is also its
    -- newest shared one (restore_diary).
    update diaries d set entry_count = d.entry_count + 1, change_position = d.change_position + 1, shared_position = d.change_position + 1
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

COMMENT ON FUNCTION public.post_entry_as(author uuid, diary_id uuid, id uuid, content text, question text, images text[], created_at timestamp with time zone) IS 'Posts an entry as author, for operators and seeds (not granted to diary_app): inserts it unless its id exists (false then), and in the same transaction counts it in the diary''s entry_count and the other members'' unread_count, logs entry.created and queues the push notifications of the members who want them.';

REVOKE ALL ON FUNCTION public.post_entry_as(author uuid, diary_id uuid, id uuid, content text, question text, images text[], created_at timestamp with time zone) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.entry_response(diary uuid, entry uuid) RETURNS TABLE(id uuid, diary_id uuid, content text, question text, created_at timestamp with time zone, updated_at timestamp with time zone, is_mine boolean, author_id uuid, author_name text, author_image text, reader_ids uuid[], read_at timestamp with time zone[], photo_ids uuid[], photo_hashes text[], photo_types text[], photo_bytes integer[], photo_widths integer[], photo_heights integer[])
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
#variable_conflict use_column
declare
    previous constant text[] := assume_server_role();
begin
    return query
        with profiles as (select * from member_profiles where member_profiles.diary_id = diary)
        select entries.id, entries.diary_id, entries.content, entries.question,
            entries.created_at, entries.updated_at, entries.user_id = app_user_id() as is_mine,
            author.public_id as author_id, author.display_name as author_name, author.profile_photo as author_image,
            reads.reader_ids, reads.read_at,
            photos.photo_ids, photos.photo_hashes, photos.photo_types, photos.photo_bytes, photos.photo_widths, photos.photo_heights
        from entries
        left join profiles author on author.user_id = entries.user_id
        cross join lateral (
            select array_agg(reader.public_id order by entry_reads.read_at, reader.public_id) as reader_ids,
                   array_agg(entry_reads.read_at order by entry_reads.read_at, reader.public_id) as read_at
            from entry_reads
            join profiles reader on reader.user_id = entry_reads.user_id
            where entry_reads.diary_id = diary and entry_reads.entry_id = entries.id) as reads
        cross join lateral (
            select array_agg(entry_photos.id order by entry_photos.position) as photo_ids,
                   array_agg(entry_photos.content_hash order by entry_photos.position) as photo_hashes,
                   array_agg(entry_photos.content_type order by entry_photos.position) as photo_types,
                   array_agg(entry_photos.bytes order by entry_photos.position) as photo_bytes,
                   array_agg(entry_photos.width order by entry_photos.position) as photo_widths,
                   array_agg(entry_photos.height order by entry_photos.position) as photo_heights
            from entry_photos
            where entry_photos.diary_id = diary and entry_photos.entry_id = entries.id) as photos
        where entries.diary_id = diary and entries.id = entry;
    if previous is not null then
        perform leave_server_role(previous);
    end if;
end
$$;

COMMENT ON FUNCTION public.entry_response(diary uuid, entry uuid) IS 'An entry as the caller sees it, with its author, readers and photos through their policies and member_profiles, as EntryRepository.entryColumns reads it (ReadBackTests): what a post or an edit answers, in the write''s own transaction. On a Citus worker it runs as diary_response does (read_back_entry).';

REVOKE ALL ON FUNCTION public.entry_response(diary uuid, entry uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.entry_response(diary uuid, entry uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.read_back_entry(diary uuid, entry uuid) RETURNS TABLE(id uuid, diary_id uuid, content text, question text, created_at timestamp with time zone, updated_at timestamp with time zone, is_mine boolean, author_id uuid, author_name text, author_image text, reader_ids uuid[], read_at timestamp with time zone[], photo_ids uuid[], photo_hashes text[], photo_types text[], photo_bytes integer[], photo_widths integer[], photo_heights integer[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query select r.* from diaries d cross join lateral entry_response(d.id, read_back_entry.entry) r where d.id = read_back_entry.diary;
end
$$;

COMMENT ON FUNCTION public.read_back_entry(diary uuid, entry uuid) IS 'entry_response on a Citus coordinator, in a write''s transaction, routed as read_back_diary is.';

REVOKE ALL ON FUNCTION public.read_back_entry(diary uuid, entry uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.read_back_entry(diary uuid, entry uuid) TO diary_app;

-- Policies

DROP POLICY IF EXISTS entries_delete ON public.entries;
CREATE POLICY entries_delete ON public.entries FOR DELETE USING (((diary_id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[])) AND (user_id = ( SELECT public.app_user_id() AS app_user_id))));

DROP POLICY IF EXISTS entries_insert ON public.entries;
CREATE POLICY entries_insert ON public.entries FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS entries_select ON public.entries;
CREATE POLICY entries_select ON public.entries FOR SELECT USING (((diary_id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[])) IS TRUE));

DROP POLICY IF EXISTS entries_update ON public.entries;
CREATE POLICY entries_update ON public.entries FOR UPDATE USING ((diary_id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[]))) WITH CHECK (((user_id = ( SELECT public.app_user_id() AS app_user_id)) AND (diary_id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[]))));

DROP POLICY IF EXISTS entry_reads_delete ON public.entry_reads;
CREATE POLICY entry_reads_delete ON public.entry_reads FOR DELETE USING (false);

DROP POLICY IF EXISTS entry_reads_insert ON public.entry_reads;
CREATE POLICY entry_reads_insert ON public.entry_reads FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS entry_reads_select ON public.entry_reads;
CREATE POLICY entry_reads_select ON public.entry_reads FOR SELECT USING (((diary_id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[])) IS TRUE));

DROP POLICY IF EXISTS entry_reads_update ON public.entry_reads;
CREATE POLICY entry_reads_update ON public.entry_reads FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS questions_delete ON public.questions;
CREATE POLICY questions_delete ON public.questions FOR DELETE USING (false);

DROP POLICY IF EXISTS questions_insert ON public.questions;
CREATE POLICY questions_insert ON public.questions FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS questions_select ON public.questions;
CREATE POLICY questions_select ON public.questions FOR SELECT USING (true);

DROP POLICY IF EXISTS questions_update ON public.questions;
CREATE POLICY questions_update ON public.questions FOR UPDATE USING (false) WITH CHECK (false);

-- Triggers

CREATE OR REPLACE TRIGGER entries_deleted_by_forget_entries BEFORE DELETE ON public.entries FOR EACH ROW EXECUTE FUNCTION public.refuse_direct_write('forget_entries', 'forget_diary', 'forget_user');

CREATE OR REPLACE TRIGGER entries_edited_by_edit_entry BEFORE UPDATE OF content, question, images ON public.entries FOR EACH ROW WHEN ((((old.content IS DISTINCT FROM new.content) OR (old.question IS DISTINCT FROM new.question)) OR (old.images IS DISTINCT FROM new.images))) EXECUTE FUNCTION public.refuse_direct_write('edit_entry', 'set_entry_photos');

CREATE OR REPLACE TRIGGER entries_keys_fixed AFTER UPDATE OF diary_id, id, user_id ON public.entries FOR EACH ROW WHEN (((old.diary_id IS DISTINCT FROM new.diary_id) OR (old.id IS DISTINCT FROM new.id) OR (old.user_id IS DISTINCT FROM new.user_id))) EXECUTE FUNCTION public.forbid_key_change();

CREATE OR REPLACE TRIGGER entries_posted_by_post_entry BEFORE INSERT ON public.entries FOR EACH STATEMENT EXECUTE FUNCTION public.refuse_direct_write('post_entry');

CREATE OR REPLACE TRIGGER entries_set_updated_at BEFORE UPDATE ON public.entries FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();

CREATE OR REPLACE TRIGGER entry_reads_keys_fixed AFTER UPDATE OF diary_id, entry_id, user_id ON public.entry_reads FOR EACH ROW WHEN (((old.diary_id IS DISTINCT FROM new.diary_id) OR (old.entry_id IS DISTINCT FROM new.entry_id) OR (old.user_id IS DISTINCT FROM new.user_id))) EXECUTE FUNCTION public.forbid_key_change();

CREATE OR REPLACE TRIGGER entry_reads_made_by_mark_as_read BEFORE INSERT ON public.entry_reads FOR EACH STATEMENT EXECUTE FUNCTION public.refuse_direct_write('mark_as_read');
