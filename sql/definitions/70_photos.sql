-- Definitions: photos. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.claim_photo_garbage(max_hashes integer, kept_for interval) RETURNS TABLE(content_hash text, unnamed boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    claimed text[];
    hash text;
begin
    with taken as (
        delete from photo_garbage g
        where g.content_hash in (
            select q.content_hash from photo_garbage q where q.queued_at <= now() - kept_for
            order by q.queued_at limit max_hashes for update skip locked)
        returning g.content_hash
    )
    select coalesce(array_agg(taken.content_hash order by taken.content_hash), '{}') into claimed from taken;
    -- In hash order, as unnamed_photo_files takes them, so two collectors never deadlock.
    foreach hash in array claimed loop
        content_hash := hash;
        unnamed := photo_hash_unnamed(hash);
        return next;
    end loop;
    delete from photo_upload_days d where d.day < (now() at time zone 'UTC')::date - 2;
end
$$;

COMMENT ON FUNCTION public.claim_photo_garbage(max_hashes integer, kept_for interval) IS 'claim_photo_garbage(max_hashes), of the hashes queued at least kept_for ago only: the files of deleted photos stay for the restore window (PHOTO_DELETED_KEEP_HOURS), so that a database restored to a point before the deletion finds them.';

REVOKE ALL ON FUNCTION public.claim_photo_garbage(max_hashes integer, kept_for interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.claim_photo_garbage(max_hashes integer, kept_for interval) TO diary_app;

CREATE OR REPLACE FUNCTION public.count_photo_upload(caller uuid, hash text, daily_limit integer) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    perform photo_hash_lock(hash);
    insert into photo_upload_days as d (user_id, day, uploads)
    values (caller, (now() at time zone 'UTC')::date, 1)
    on conflict (user_id, day) do update set uploads = d.uploads + 1 where d.uploads < daily_limit;
    if not found then
        insert into photo_garbage (content_hash) values (hash) on conflict (content_hash) do nothing;
        return false;
    end if;
    return true;
end
$$;

COMMENT ON FUNCTION public.count_photo_upload(caller uuid, hash text, daily_limit integer) IS 'An upload''s share of record_photo_upload and set_profile_photo: takes the hash''s lock, so that a collector cannot remove the file the upload put, and counts the upload against the caller''s day; false over daily_limit, and the file is then queued for collection. Called inside those SECURITY DEFINER functions only.';

REVOKE ALL ON FUNCTION public.count_photo_upload(caller uuid, hash text, daily_limit integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.expire_photo_uploads(max_age interval) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
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

COMMENT ON FUNCTION public.expire_photo_uploads(max_age interval) IS 'Deletes uploads never attached within max_age, whose hashes then queue themselves for collection, and returns how many; the photo sweeper calls it.';

REVOKE ALL ON FUNCTION public.expire_photo_uploads(max_age interval) FROM PUBLIC;
GRANT ALL ON FUNCTION public.expire_photo_uploads(max_age interval) TO diary_app;

CREATE OR REPLACE FUNCTION public.photo_file(photo_id uuid) RETURNS TABLE(content_hash text, content_type text, bytes integer)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query select p.content_hash, p.content_type, p.bytes from entry_photos p where p.id = photo_id limit 1;
    if not found then
        return query select u.content_hash, u.content_type, u.bytes from photo_uploads u where u.id = photo_id limit 1;
    end if;
    if not found then
        return query select f.content_hash, f.content_type, f.bytes from profile_photos f where f.id = photo_id;
    end if;
end
$$;

COMMENT ON FUNCTION public.photo_file(photo_id uuid) IS 'The file, type and size behind a signed photo URL, attached or not. The URL''s signature is already checked and no caller is signed in, so it reads as the owner.';

REVOKE ALL ON FUNCTION public.photo_file(photo_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.photo_file(photo_id uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.photo_garbage_backlog() RETURNS bigint
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$ select count(*) from photo_garbage $$;

COMMENT ON FUNCTION public.photo_garbage_backlog() IS 'The collection queue''s length, for a gauge: it grows only while files are not being removed.';

REVOKE ALL ON FUNCTION public.photo_garbage_backlog() FROM PUBLIC;
GRANT ALL ON FUNCTION public.photo_garbage_backlog() TO diary_app;

CREATE OR REPLACE FUNCTION public.photo_hash_lock(hash text) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'public'
    AS $$ select pg_advisory_xact_lock(hashtext('photo:' || hash)) $$;

COMMENT ON FUNCTION public.photo_hash_lock(hash text) IS 'The advisory lock per content hash that orders a file''s removal against a row that names it: an upload inserts its row under it and a collector checks for rows under it, so a file is never removed while a row naming it commits.';

REVOKE ALL ON FUNCTION public.photo_hash_lock(hash text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.photo_hash_unnamed(hash text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    perform photo_hash_lock(hash);
    return not exists (select 1 from photo_uploads u where u.content_hash = hash)
       and not exists (select 1 from entry_photos p where p.content_hash = hash)
       and not exists (select 1 from profile_photos f where f.content_hash = hash);
end
$$;

COMMENT ON FUNCTION public.photo_hash_unnamed(hash text) IS 'Whether no upload and no entry photo names the hash, asked under its lock, which the caller''s transaction keeps until it has removed the file.';

REVOKE ALL ON FUNCTION public.photo_hash_unnamed(hash text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.photos_per_entry(user_id uuid) RETURNS integer
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$ select case when user_plan(photos_per_entry.user_id) = 'free' then 1 else 4 end $$;

COMMENT ON FUNCTION public.photos_per_entry(user_id uuid) IS 'Photos an entry may carry on the user''s plan: 1 on free, 4 on premium or couple (a partner''s couple plan included). set_entry_photos enforces it (ZN006).';

REVOKE ALL ON FUNCTION public.photos_per_entry(user_id uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.remove_profile_photo() RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := require_caller();
    old_hash text;
begin
    perform set_app_setting('app.writer', 'remove_profile_photo');
    delete from profile_photos f where f.user_id = caller returning f.content_hash into old_hash;
    perform set_app_setting('app.writer', '');
    if old_hash is null then
        return false;
    end if;
    insert into photo_garbage (content_hash) values (old_hash) on conflict (content_hash) do nothing;
    return true;
end
$$;

COMMENT ON FUNCTION public.remove_profile_photo() IS 'DELETE /v1/me/photo: removes the caller''s profile photo, whose file is then queued for collection; false when there was none.';

REVOKE ALL ON FUNCTION public.remove_profile_photo() FROM PUBLIC;
GRANT ALL ON FUNCTION public.remove_profile_photo() TO diary_app;

CREATE OR REPLACE FUNCTION public.record_photo_upload(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer, checksum bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := app_user_id();
begin
    if not count_photo_upload(caller, hash, daily_limit) then
        return false;
    end if;
    insert into photo_uploads (id, uploader_id, content_hash, content_type, bytes, width, height, content_crc32)
    values (photo_id, caller, hash, media_type, byte_count, pixel_width, pixel_height, checksum);
    return true;
end
$$;

COMMENT ON FUNCTION public.record_photo_upload(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer, checksum bigint) IS 'Records the caller''s upload, whose file is already stored, with its CRC-32 (so that an export can stream each photo into a ZIP reading it once), unless the day''s limit is reached: then false, and the file is queued for removal. The row is inserted under the hash''s lock, so that no collector removes the file meanwhile.';

REVOKE ALL ON FUNCTION public.record_photo_upload(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer, checksum bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.record_photo_upload(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer, checksum bigint) TO diary_app;

CREATE OR REPLACE FUNCTION public.set_profile_photo(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer, checksum bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := app_user_id();
    old_hash text;
begin
    if not count_photo_upload(caller, hash, daily_limit) then
        return false;
    end if;
    select f.content_hash into old_hash from profile_photos f where f.user_id = caller for update;
    perform set_app_setting('app.writer', 'set_profile_photo');
    insert into profile_photos as f (user_id, id, content_hash, content_type, bytes, width, height, content_crc32)
    values (caller, photo_id, hash, media_type, byte_count, pixel_width, pixel_height, checksum)
    on conflict (user_id) do update set id = excluded.id, content_hash = excluded.content_hash, content_type = excluded.content_type,
        bytes = excluded.bytes, width = excluded.width, height = excluded.height, content_crc32 = excluded.content_crc32, created_at = excluded.created_at;
    perform set_app_setting('app.writer', '');
    if old_hash is not null and old_hash <> hash then
        insert into photo_garbage (content_hash) values (old_hash) on conflict (content_hash) do nothing;
    end if;
    return true;
end
$$;

COMMENT ON FUNCTION public.set_profile_photo(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer, checksum bigint) IS 'PUT /v1/me/photo: makes an upload, already in the store under hash, the caller''s profile photo, under the hash''s lock as record_photo_upload records one and within the same daily upload limit (false when over it); the photo it replaces is queued for collection.';

REVOKE ALL ON FUNCTION public.set_profile_photo(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer, checksum bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.set_profile_photo(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer, checksum bigint) TO diary_app;

CREATE OR REPLACE FUNCTION public.set_entry_photos(diary uuid, entry uuid, photos uuid[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := require_caller();
    current_photos uuid[];
    allowed integer;
    photo uuid;
begin
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
        raise exception 'this needs premium: the free plan allows % photos an entry', allowed using errcode = 'ZN006';
    end if;
    foreach photo in array photos loop
        continue when photo = any (current_photos);
        continue when exists (select 1 from photo_uploads u where u.id = photo and u.uploader_id = caller);
        if exists (select 1 from entry_photos p where p.id = photo and p.uploader_id = caller) then
            raise exception 'photo % is already attached to another entry', photo using errcode = 'ZN005';
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

COMMENT ON FUNCTION public.set_entry_photos(diary uuid, entry uuid, photos uuid[]) IS 'Makes the caller''s entry''s photos exactly photos, in order: kept ones stay, new ones move from the caller''s uploads with their checksum, dropped ones are deleted and their files follow. ZN004 for a photo that is not the caller''s upload, ZN005 for one attached to another entry, ZN006 for more than the plan allows; an entry that is not the caller''s own is left alone for the edit to refuse.';

REVOKE ALL ON FUNCTION public.set_entry_photos(diary uuid, entry uuid, photos uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.set_entry_photos(diary uuid, entry uuid, photos uuid[]) TO diary_app;

CREATE OR REPLACE FUNCTION public.unnamed_photo_files(hashes text[]) RETURNS SETOF text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    hash text;
begin
    foreach hash in array array(select distinct h from unnest(hashes) h order by h) loop
        if photo_hash_unnamed(hash) then
            return next hash;
        end if;
    end loop;
end
$$;

COMMENT ON FUNCTION public.unnamed_photo_files(hashes text[]) IS 'Of the hashes of files found in the photo store, those that no row names (left by a crash between writing a file and its row), locked in hash order for the caller''s transaction, which removes their files before it commits.';

REVOKE ALL ON FUNCTION public.unnamed_photo_files(hashes text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.unnamed_photo_files(hashes text[]) TO diary_app;

-- Policies

DROP POLICY IF EXISTS entry_photos_delete ON public.entry_photos;
CREATE POLICY entry_photos_delete ON public.entry_photos FOR DELETE USING (false);

DROP POLICY IF EXISTS entry_photos_insert ON public.entry_photos;
CREATE POLICY entry_photos_insert ON public.entry_photos FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS entry_photos_select ON public.entry_photos;
CREATE POLICY entry_photos_select ON public.entry_photos FOR SELECT USING (((diary_id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[])) IS TRUE));

DROP POLICY IF EXISTS entry_photos_update ON public.entry_photos;
CREATE POLICY entry_photos_update ON public.entry_photos FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS photo_garbage_delete ON public.photo_garbage;
CREATE POLICY photo_garbage_delete ON public.photo_garbage FOR DELETE USING (false);

DROP POLICY IF EXISTS photo_garbage_insert ON public.photo_garbage;
CREATE POLICY photo_garbage_insert ON public.photo_garbage FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS photo_garbage_select ON public.photo_garbage;
CREATE POLICY photo_garbage_select ON public.photo_garbage FOR SELECT USING (false);

DROP POLICY IF EXISTS photo_garbage_update ON public.photo_garbage;
CREATE POLICY photo_garbage_update ON public.photo_garbage FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS photo_upload_days_delete ON public.photo_upload_days;
CREATE POLICY photo_upload_days_delete ON public.photo_upload_days FOR DELETE USING (false);

DROP POLICY IF EXISTS photo_upload_days_insert ON public.photo_upload_days;
CREATE POLICY photo_upload_days_insert ON public.photo_upload_days FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS photo_upload_days_select ON public.photo_upload_days;
CREATE POLICY photo_upload_days_select ON public.photo_upload_days FOR SELECT USING ((user_id = ( SELECT public.app_user_id() AS app_user_id)));

DROP POLICY IF EXISTS photo_upload_days_update ON public.photo_upload_days;
CREATE POLICY photo_upload_days_update ON public.photo_upload_days FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS profile_photos_delete ON public.profile_photos;
CREATE POLICY profile_photos_delete ON public.profile_photos FOR DELETE USING (false);

DROP POLICY IF EXISTS profile_photos_insert ON public.profile_photos;
CREATE POLICY profile_photos_insert ON public.profile_photos FOR INSERT WITH CHECK (false);

-- No IS TRUE, unlike users_select: Citus cannot send it on to the shards of a table laid out
-- before the policy is created (unrecognized node type), and in USING a null hides the row anyway.
DROP POLICY IF EXISTS profile_photos_select ON public.profile_photos;
CREATE POLICY profile_photos_select ON public.profile_photos FOR SELECT USING ((user_id = ANY (( SELECT public.app_visible_user_ids() AS app_visible_user_ids)::uuid[])));

DROP POLICY IF EXISTS profile_photos_update ON public.profile_photos;
CREATE POLICY profile_photos_update ON public.profile_photos FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS photo_uploads_delete ON public.photo_uploads;
CREATE POLICY photo_uploads_delete ON public.photo_uploads FOR DELETE USING (false);

DROP POLICY IF EXISTS photo_uploads_insert ON public.photo_uploads;
CREATE POLICY photo_uploads_insert ON public.photo_uploads FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS photo_uploads_select ON public.photo_uploads;
CREATE POLICY photo_uploads_select ON public.photo_uploads FOR SELECT USING ((uploader_id = ( SELECT public.app_user_id() AS app_user_id)));

DROP POLICY IF EXISTS photo_uploads_update ON public.photo_uploads;
CREATE POLICY photo_uploads_update ON public.photo_uploads FOR UPDATE USING (false) WITH CHECK (false);

-- Triggers

CREATE OR REPLACE TRIGGER entry_photos_deleted_by_forget_entries BEFORE DELETE ON public.entry_photos FOR EACH ROW EXECUTE FUNCTION public.refuse_direct_write('forget_entries', 'forget_diary', 'set_entry_photos', 'forget_user');

CREATE OR REPLACE TRIGGER profile_photos_written_by_their_functions BEFORE INSERT OR DELETE OR UPDATE ON public.profile_photos FOR EACH ROW EXECUTE FUNCTION public.refuse_direct_write('set_profile_photo', 'remove_profile_photo', 'forget_user');

CREATE OR REPLACE TRIGGER photo_uploads_deleted_by_their_functions BEFORE DELETE ON public.photo_uploads FOR EACH ROW EXECUTE FUNCTION public.refuse_direct_write('set_entry_photos', 'expire_photo_uploads', 'forget_user');
