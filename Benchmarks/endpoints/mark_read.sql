-- POST /v1/diaries/{id}/entries/{entryId}/read (EntryRepository.markRead): user n reads
-- entry d + 1500 * (n % 133) of their home diary. One round trip.
\set n random(1, 10000)
\set d case when :n <= 5000 then (:n - 1) / 10 + 1 when :n <= 9000 then 501 + (:n - 5001) / 8 else 1001 + (:n - 9001) / 2 end
\set k :d + 1500 * (:n % 133)
\startpipeline
BEGIN;
select authenticate(md5('s' || :n)::uuid, md5(:n::text)::uuid);
select 1 from entries where entries.diary_id = md5('d' || :d)::uuid and md5('d' || :d)::uuid = any ((select app_diary_ids())::uuid[]) and entries.id = md5('e' || :k)::uuid;
select mark_as_read(md5('d' || :d)::uuid, md5('e' || :k)::uuid, (select app_user_id()));
COMMIT;
-- What it announced, sent once committed (Announcement), in the same round trip.
select announce_pending();
\endpipeline
