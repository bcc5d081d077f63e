-- GET /v1/diaries/{id}/entries?limit=20 (RequestScope + EntryRepository.timeline), pipelined
-- like the server: BEGIN, the statements and COMMIT in one round trip.
\set n random(1, 10000)
\set d case when :n <= 5000 then (:n - 1) / 10 + 1 when :n <= 9000 then 501 + (:n - 5001) / 8 else 1001 + (:n - 9001) / 2 end
\startpipeline
BEGIN;
select authenticate(md5('s' || :n)::uuid, md5(:n::text)::uuid);
select diaries.change_position from diaries where diaries.id = md5('d' || :d)::uuid and diaries.id = any ((select app_diary_ids())::uuid[]);
select set_config('enable_bitmapscan', 'off', true);
with profiles as (select * from member_profiles where member_profiles.diary_id = md5('d' || :d)::uuid)
select entries.id, entries.diary_id, entries.content, entries.question,
    entries.created_at, entries.updated_at, entries.user_id = (select app_user_id()) as is_mine,
    author.public_id as author_id, author.display_name as author_name, author.profile_photo as author_image,
    reads.reader_ids, reads.read_at,
    photos.photo_ids, photos.photo_hashes, photos.photo_types, photos.photo_bytes, photos.photo_widths, photos.photo_heights
from (select entries.id from entries
     where entries.diary_id = md5('d' || :d)::uuid and md5('d' || :d)::uuid = any ((select app_diary_ids())::uuid[])
     order by entries.created_at desc, entries.id desc limit 21) page
    cross join lateral (select * from entries where entries.diary_id = md5('d' || :d)::uuid and entries.id = page.id offset 0) entries
left join profiles author on author.user_id = entries.user_id
cross join lateral (
    select array_agg(reader.public_id order by entry_reads.read_at, reader.public_id) as reader_ids,
           array_agg(entry_reads.read_at order by entry_reads.read_at, reader.public_id) as read_at
    from entry_reads
    join profiles reader on reader.user_id = entry_reads.user_id
    where entry_reads.diary_id = md5('d' || :d)::uuid and entry_reads.entry_id = entries.id and (entry_reads.diary_id = any ((select app_diary_ids())::uuid[])) is true) as reads
cross join lateral (
    select array_agg(entry_photos.id order by entry_photos.position) as photo_ids, array_agg(entry_photos.content_hash order by entry_photos.position) as photo_hashes,
           array_agg(entry_photos.content_type order by entry_photos.position) as photo_types,
           array_agg(entry_photos.bytes order by entry_photos.position) as photo_bytes,
           array_agg(entry_photos.width order by entry_photos.position) as photo_widths,
           array_agg(entry_photos.height order by entry_photos.position) as photo_heights
    from entry_photos
    where entry_photos.diary_id = md5('d' || :d)::uuid and entry_photos.entry_id = entries.id and (entry_photos.diary_id = any ((select app_diary_ids())::uuid[])) is true) as photos
where entries.diary_id = md5('d' || :d)::uuid and md5('d' || :d)::uuid = any ((select app_diary_ids())::uuid[])
order by entries.created_at desc, entries.id desc;
COMMIT;
\endpipeline
