-- POST /v1/diaries/join (DiaryRepository.join) with the invite code of the caller's own
-- diary: the repeatable path (already a member), since a real join succeeds once. One round trip;
-- the diary is read by the id join_diary returns, passed on in app.written, through
-- diary_response (ReadBack).
\set n random(1, 10000)
\set d case when :n <= 5000 then (:n - 1) / 10 + 1 when :n <= 9000 then 501 + (:n - 5001) / 8 else 1001 + (:n - 9001) / 2 end
\startpipeline
BEGIN;
select authenticate(md5('s' || :n)::uuid, md5(:n::text)::uuid);
select set_config('app.written', (join_diary('B' || lpad(:d::text, 9, '0'), (select app_user_id())))::text, true);
select * from diary_response(current_setting('app.written')::uuid);
COMMIT;
-- What it announced, sent once committed (Announcement), in the same round trip.
select announce_pending();
\endpipeline
