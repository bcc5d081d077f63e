-- POST /v1/diaries/{id}/entries with a client-generated id (RequestScope + EntryRepository.create),
-- pipelined like the server: one round trip.
\set n random(1, 10000)
\set d case when :n <= 5000 then (:n - 1) / 10 + 1 when :n <= 9000 then 501 + (:n - 5001) / 8 else 1001 + (:n - 9001) / 2 end
\set e random(1, 2000000000)
\startpipeline
BEGIN;
select authenticate(md5('s' || :n)::uuid, md5(:n::text)::uuid);
select 1 from diaries where diaries.id = md5('d' || :d)::uuid and diaries.id = any ((select app_diary_ids())::uuid[]);
select set_config('app.inserted_entry', md5('post ' || :client_id || ' ' || :e)::uuid::text, true)
where post_entry(md5('d' || :d)::uuid, md5('post ' || :client_id || ' ' || :e)::uuid, 'ベンチマークの日記', null::text, '{}'::text[]::text[]);
select * from entry_response(md5('d' || :d)::uuid, md5('post ' || :client_id || ' ' || :e)::uuid);
COMMIT;
-- What it announced, sent once committed (Announcement), in the same round trip.
select announce_pending();
\endpipeline
