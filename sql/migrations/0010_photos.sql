-- Photos: uploads, an entry's pictures, and the files they name.
--
-- A photo is uploaded first (photo_uploads, the uploader's alone), then attached to one
-- entry, which moves its row to entry_photos: from then on it is the diary's, keyed by
-- diary_id like every tenant table. The bytes live in a content-addressed store outside
-- the database (the server's PhotoStore), named by their SHA-256. Two rows may name the
-- same file, so a file goes only when no row names it.
--
-- Every deletion of a row, whatever causes it (an entry or an account deleted, a diary's
-- last member leaving, a photo dropped from an entry, an upload never attached), queues
-- its hash in photo_garbage in the same transaction. After the commit a server removes the
-- files that no row names any more; a crash in between loses nothing, the queue stays.
-- File and row are kept consistent by one advisory lock per hash (photo_hash_lock): an
-- upload inserts its row under it, a collector checks for rows and removes the file under
-- it, so a file is never removed while a row that names it commits.

create table photo_uploads (
    id uuid primary key,
    uploader_id uuid not null references users (id) on delete cascade,
    content_hash text not null check (content_hash ~ '^[0-9a-f]{64}$'),
    content_type text not null check (content_type in ('image/jpeg', 'image/png', 'image/webp')),
    bytes integer not null check (bytes between 1 and 10485760),
    width integer not null check (width between 1 and 12000),
    height integer not null check (height between 1 and 12000),
    created_at timestamptz not null default now()
);
create index photo_uploads_uploader on photo_uploads (uploader_id);
create index photo_uploads_created on photo_uploads (created_at);
create index photo_uploads_hash on photo_uploads (content_hash);

create table entry_photos (
    diary_id uuid not null,
    id uuid not null,
    entry_id uuid not null,
    position smallint not null check (position between 0 and 3),
    uploader_id uuid not null references users (id) on delete cascade,
    content_hash text not null check (content_hash ~ '^[0-9a-f]{64}$'),
    content_type text not null check (content_type in ('image/jpeg', 'image/png', 'image/webp')),
    bytes integer not null check (bytes between 1 and 10485760),
    width integer not null check (width between 1 and 12000),
    height integer not null check (height between 1 and 12000),
    created_at timestamptz not null,
    primary key (diary_id, id),
    foreign key (diary_id, entry_id) references entries (diary_id, id) on delete cascade
);
create index entry_photos_entry on entry_photos (diary_id, entry_id, position);
-- A signed URL names the photo alone.
create index entry_photos_id on entry_photos (id);
create index entry_photos_hash on entry_photos (content_hash);

-- Hashes whose rows were deleted, waiting for their files to be removed.
create table photo_garbage (
    content_hash text primary key,
    queued_at timestamptz not null default now()
);

-- Uploads per user and UTC day, for the daily limit: one row a day, whatever the history.
create table photo_upload_days (
    user_id uuid not null references users (id) on delete cascade,
    day date not null,
    uploads integer not null,
    primary key (user_id, day)
);

alter table photo_uploads enable row level security;
alter table photo_uploads force row level security;
create policy photo_uploads_select on photo_uploads for select using (uploader_id = (select app_user_id()));
create policy photo_uploads_insert on photo_uploads for insert with check (false);
create policy photo_uploads_update on photo_uploads for update using (false) with check (false);
create policy photo_uploads_delete on photo_uploads for delete using (false);

alter table entry_photos enable row level security;
alter table entry_photos force row level security;
create policy entry_photos_select on entry_photos for select
    using ((diary_id = any ((select app_diary_ids())::uuid[])) is true);
create policy entry_photos_insert on entry_photos for insert with check (false);
create policy entry_photos_update on entry_photos for update using (false) with check (false);
create policy entry_photos_delete on entry_photos for delete using (false);

alter table photo_garbage enable row level security;
alter table photo_garbage force row level security;
create policy photo_garbage_select on photo_garbage for select using (false);
create policy photo_garbage_insert on photo_garbage for insert with check (false);
create policy photo_garbage_update on photo_garbage for update using (false) with check (false);
create policy photo_garbage_delete on photo_garbage for delete using (false);

alter table photo_upload_days enable row level security;
alter table photo_upload_days force row level security;
create policy photo_upload_days_select on photo_upload_days for select using (user_id = (select app_user_id()));
create policy photo_upload_days_insert on photo_upload_days for insert with check (false);
create policy photo_upload_days_update on photo_upload_days for update using (false) with check (false);
create policy photo_upload_days_delete on photo_upload_days for delete using (false);

-- Reads only; every write goes through the functions below.
grant select on photo_uploads, entry_photos, photo_upload_days to diary_app;

-- The lock that orders a file's removal against a row that names it.
create function photo_hash_lock(hash text) returns void
language sql volatile
set search_path = pg_catalog, public
as $$ select pg_advisory_xact_lock(hashtext('photo:' || hash)) $$;
revoke execute on function photo_hash_lock(text) from public;

-- Whether no row names the hash, asked under its lock, which the caller's transaction
-- keeps until the file is removed.
create function photo_hash_unnamed(hash text) returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, public
as $$
begin
    perform photo_hash_lock(hash);
    return not exists (select 1 from photo_uploads u where u.content_hash = hash)
       and not exists (select 1 from entry_photos p where p.content_hash = hash);
end
$$;
revoke execute on function photo_hash_unnamed(text) from public;

create function queue_photo_garbage() returns trigger
language plpgsql security definer
set search_path = pg_catalog, public
as $$
begin
    insert into photo_garbage (content_hash)
    select distinct gone.content_hash from gone
    on conflict (content_hash) do nothing;
    return null;
end
$$;
revoke execute on function queue_photo_garbage() from public;

create trigger photo_uploads_queue_garbage after delete on photo_uploads
    referencing old table as gone for each statement execute function queue_photo_garbage();
create trigger entry_photos_queue_garbage after delete on entry_photos
    referencing old table as gone for each statement execute function queue_photo_garbage();

-- Records the caller's upload, whose file is already stored, unless the day's limit is
-- reached: then false, and the file is queued for removal unless another row names it.
create function record_photo_upload(
    photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer
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
    insert into photo_uploads (id, uploader_id, content_hash, content_type, bytes, width, height)
    values (photo_id, caller, hash, media_type, byte_count, pixel_width, pixel_height);
    return true;
end
$$;
revoke execute on function record_photo_upload(uuid, text, text, integer, integer, integer, integer) from public;
grant execute on function record_photo_upload(uuid, text, text, integer, integer, integer, integer) to diary_app;

-- Photos an entry may carry: 1 on the free plan, 4 on premium.
create function photos_per_entry(user_id uuid) returns integer
language sql stable security definer
set search_path = pg_catalog, public
as $$
    select case when coalesce((select u.premium_expires_at > now() from users u where u.id = photos_per_entry.user_id), false) then 4 else 1 end
$$;
revoke execute on function photos_per_entry(uuid) from public;

-- Makes the caller's entry's photos exactly `photos`, in order. Photos kept stay, new ones
-- move from the caller's uploads, dropped ones are deleted (their files follow, above).
-- An entry that is not the caller's own, in a diary they are a member of, is left alone:
-- the statement that edits the entry refuses that with the right status.
--   ZN004: a photo that is not the caller's upload (unknown, or someone else's): 404
--   ZN005: a photo of the caller's already attached to another entry: 409 photo_in_use
--   ZN006: more photos than the caller's plan allows (1 free, 4 premium): 403
create function set_entry_photos(diary uuid, entry uuid, photos uuid[]) returns void
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
    insert into entry_photos (diary_id, id, entry_id, position, uploader_id, content_hash, content_type, bytes, width, height, created_at)
    select diary, u.id, entry, o.position - 1, u.uploader_id, u.content_hash, u.content_type, u.bytes, u.width, u.height, u.created_at
    from unnest(photos) with ordinality as o (id, position)
    join photo_uploads u on u.id = o.id and u.uploader_id = caller;
    delete from photo_uploads u where u.id = any (photos) and u.uploader_id = caller;
    -- images holds the ids too, so that the change log's edit trigger sees the change.
    update entries e set images = array(select x::text from unnest(photos) x) where e.diary_id = diary and e.id = entry;
end
$$;
revoke execute on function set_entry_photos(uuid, uuid, uuid[]) from public;
grant execute on function set_entry_photos(uuid, uuid, uuid[]) to diary_app;

-- What a signed URL needs to serve: the photo's file and type, attached or not. The URL's
-- signature has already been checked; no caller is signed in.
create function photo_file(photo_id uuid) returns table (content_hash text, content_type text, bytes integer)
language sql stable security definer
set search_path = pg_catalog, public
as $$
    select p.content_hash, p.content_type, p.bytes from entry_photos p where p.id = photo_id
    union all
    select u.content_hash, u.content_type, u.bytes from photo_uploads u where u.id = photo_id
    limit 1
$$;
revoke execute on function photo_file(uuid) from public;
grant execute on function photo_file(uuid) to diary_app;

-- Collection, for the server's background pool. Takes up to `max_hashes` queued hashes,
-- locked against other collectors (SKIP LOCKED) and against uploads of the same bytes
-- (photo_hash_lock), each with whether a row still names it: the caller removes the files
-- of those that none names before it commits. Also forgets upload counts older than two days.
create function claim_photo_garbage(max_hashes integer) returns table (content_hash text, unnamed boolean)
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    claimed text[];
    hash text;
begin
    with taken as (
        delete from photo_garbage g
        where g.content_hash in (select q.content_hash from photo_garbage q order by q.queued_at limit max_hashes for update skip locked)
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
revoke execute on function claim_photo_garbage(integer) from public;
grant execute on function claim_photo_garbage(integer) to diary_app;

-- Uploads never attached within `max_age` are deleted (their hashes queue themselves).
create function expire_photo_uploads(max_age interval) returns integer
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    expired integer;
begin
    delete from photo_uploads u where u.created_at < now() - max_age;
    get diagnostics expired = row_count;
    return expired;
end
$$;
revoke execute on function expire_photo_uploads(interval) from public;
grant execute on function expire_photo_uploads(interval) to diary_app;

-- Of the hashes of files found in the store, those that no row names,
-- locked for the caller's transaction, which removes their files before it commits.
create function unnamed_photo_files(hashes text[]) returns setof text
language plpgsql security definer
set search_path = pg_catalog, public
as $$
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
revoke execute on function unnamed_photo_files(text[]) from public;
grant execute on function unnamed_photo_files(text[]) to diary_app;

-- The collection queue's length, for a gauge: it grows only while files are not removed.
create function photo_garbage_backlog() returns bigint
language sql stable security definer
set search_path = pg_catalog, public
as $$ select count(*) from photo_garbage $$;
revoke execute on function photo_garbage_backlog() from public;
grant execute on function photo_garbage_backlog() to diary_app;
