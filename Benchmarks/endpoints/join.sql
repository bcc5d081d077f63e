-- POST /v1/diaries/join (DiaryRepository.join) with the invite code of the caller's own
-- diary: the repeatable path (already a member), since a real join succeeds once. One round trip;
-- the diary is read by the id join_diary returns, passed on in app.written.
\set n random(1, 10000)
\set d case when :n <= 5000 then (:n - 1) / 10 + 1 when :n <= 9000 then 501 + (:n - 5001) / 8 else 1001 + (:n - 9001) / 2 end
\startpipeline
BEGIN;
select authenticate(md5('s' || :n)::uuid, md5(:n::text)::uuid);
select set_config('app.written', (join_diary('B' || lpad(:d::text, 9, '0'), (select app_user_id())))::text, true);
select diaries.id, diaries.name, diaries.type, diaries.invite_code, me.role, diaries.created_at,
    cardinality(members.member_ids) as member_count,
    (select e.created_at from entries e where e.diary_id = current_setting('app.written')::uuid order by e.created_at desc limit 1) as last_entry_at,
    me.unread_count,
    members.member_ids, members.member_names, members.member_images, members.member_roles, members.member_joined_at
from diaries
join diary_members me on me.diary_id = current_setting('app.written')::uuid and me.user_id = app_user_id()
cross join lateral (
    select array_agg(p.public_id order by p.joined_at, p.public_id) as member_ids,
           array_agg(p.display_name order by p.joined_at, p.public_id) as member_names,
           array_agg(p.profile_photo order by p.joined_at, p.public_id) as member_images,
           array_agg(p.role order by p.joined_at, p.public_id) as member_roles,
           array_agg(p.joined_at order by p.joined_at, p.public_id) as member_joined_at
    from member_profiles p where p.diary_id = current_setting('app.written')::uuid) as members
where diaries.id = current_setting('app.written')::uuid and diaries.id = any ((select app_diary_ids())::uuid[]);
COMMIT;
-- What it announced, sent once committed (Announcement), in the same round trip.
select announce_pending();
\endpipeline
