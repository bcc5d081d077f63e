-- Profile photos: a user's one picture, uploaded as an entry's photos are (sanitized, in the
-- same content-addressed store) and served by the same signed URLs, minted only into what a
-- caller may see: themselves and the members of their diaries, never in an anonymous diary.
-- A row per user that has one; replacing or removing it queues the old file's hash in
-- photo_garbage, as every photo's deletion does.
--
-- users.profile_image_url held any https URL its user typed, which every co-member's app then
-- loaded: a tracking pixel. It is no longer served, and emptied here; the app uploads again.
-- The column stays while the release still serving reads it (it finds it empty, as for a user
-- who never set one), and goes in a later release.
create table profile_photos (
    user_id uuid primary key references users (id) on delete cascade,
    id uuid not null unique,
    content_hash text not null check (content_hash ~ '^[0-9a-f]{64}$'),
    content_type text not null check (content_type in ('image/jpeg', 'image/png', 'image/webp')),
    bytes integer not null check (bytes between 1 and 10485760),
    width integer not null check (width between 1 and 12000),
    height integer not null check (height between 1 and 12000),
    content_crc32 bigint,
    created_at timestamptz not null default now()
);
create index profile_photos_hash on profile_photos (content_hash);
alter table profile_photos enable row level security;
alter table profile_photos force row level security;
grant select on profile_photos to diary_app;

update users set profile_image_url = null where profile_image_url is not null;
