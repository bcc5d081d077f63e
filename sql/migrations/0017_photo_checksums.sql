-- Each photo keeps the CRC-32 of its bytes beside their SHA-256, computed while the upload
-- is hashed. An export stores photos uncompressed, and a stored ZIP entry must carry its
-- CRC-32 and size in its local header, before its bytes, or a streaming reader (Java's
-- ZipInputStream, as Android apps use) cannot tell where it ends. With the checksum kept,
-- an export reads each photo once.
--
-- Photos uploaded before this have none (null); `diary-server photos backfill-checksums`
-- reads their bytes from the store and fills it in, and an export computes a missing one
-- itself, reading that photo twice.
alter table photo_uploads add column content_crc32 bigint check (content_crc32 between 0 and 4294967295);
alter table entry_photos add column content_crc32 bigint check (content_crc32 between 0 and 4294967295);

-- The hashes that still lack a checksum, for the backfill: one of them per content_hash.
create index photo_uploads_missing_crc32 on photo_uploads (content_hash) where content_crc32 is null;
create index entry_photos_missing_crc32 on entry_photos (content_hash) where content_crc32 is null;

create function record_photo_upload(
    photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer,
    daily_limit integer, checksum bigint
) returns boolean
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := app_user_id();
begin
    if caller is null then
        raise exception 'not signed in' using errcode = 'ZN401';
    end if;
    perform photo_hash_lock(hash);
    insert into photo_upload_days as d (user_id, day, uploads)
    values (caller, (now() at time zone 'UTC')::date, 1)
    on conflict (user_id, day) do update set uploads = d.uploads + 1 where d.uploads < daily_limit;
    if not found then
        insert into photo_garbage (content_hash) values (hash) on conflict (content_hash) do nothing;
        return false;
    end if;
    insert into photo_uploads (id, uploader_id, content_hash, content_type, bytes, width, height, content_crc32)
    values (photo_id, caller, hash, media_type, byte_count, pixel_width, pixel_height, checksum);
    return true;
end
$$;
revoke all on function record_photo_upload(uuid, text, text, integer, integer, integer, integer, bigint) from public;
grant execute on function record_photo_upload(uuid, text, text, integer, integer, integer, integer, bigint) to diary_app;

-- The old signature stays for servers of the previous release while a deploy rolls; their
-- uploads get no checksum, as photos before this migration had none.
create or replace function record_photo_upload(
    photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer
) returns boolean
language sql security definer
set search_path = pg_catalog, public
as $$
    select record_photo_upload(photo_id, hash, media_type, byte_count, pixel_width, pixel_height, daily_limit, null::bigint)
$$;

-- Attaching carries the checksum from the upload to the diary's row.
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
    delete from entry_photos p where p.diary_id = diary and p.entry_id = entry and p.id <> all (photos);
    update entry_photos p set position = o.position - 1
    from unnest(photos) with ordinality as o (id, position)
    where p.diary_id = diary and p.entry_id = entry and p.id = o.id and p.position <> o.position - 1;
    insert into entry_photos (diary_id, id, entry_id, position, uploader_id, content_hash, content_type, bytes, width, height, created_at, content_crc32)
    select diary, u.id, entry, o.position - 1, u.uploader_id, u.content_hash, u.content_type, u.bytes, u.width, u.height, u.created_at, u.content_crc32
    from unnest(photos) with ordinality as o (id, position)
    join photo_uploads u on u.id = o.id and u.uploader_id = caller;
    delete from photo_uploads u where u.id = any (photos) and u.uploader_id = caller;
    -- images holds the ids too, so that the change log's edit trigger sees the change.
    update entries e set images = array(select x::text from unnest(photos) x) where e.diary_id = diary and e.id = entry;
end
$$;
