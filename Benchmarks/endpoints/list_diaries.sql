-- GET /v1/diaries (DiaryRepository.list): each diary's last entry walks entries_timeline (EntryRepository.walkTheTimeline). One round trip.
\set n random(1, 10000)
\startpipeline
BEGIN;
select authenticate(md5('s' || :n)::uuid, md5(:n::text)::uuid);
select set_config('enable_bitmapscan', 'off', true);
select diaries.id, diaries.name, diaries.type, diaries.invite_code, me.role, diaries.created_at,
    cardinality(members.member_ids) as member_count,
    (select e.created_at from entries e where e.diary_id = diaries.id order by e.created_at desc limit 1) as last_entry_at,
    me.unread_count,
    members.member_ids, members.member_names, members.member_images, members.member_roles, members.member_joined_at
from diaries
join diary_members me on me.diary_id = diaries.id and me.user_id = app_user_id()
cross join lateral (
    select array_agg(p.public_id order by p.joined_at, p.public_id) as member_ids,
           array_agg(p.display_name order by p.joined_at, p.public_id) as member_names,
           array_agg(p.profile_photo order by p.joined_at, p.public_id) as member_images,
           array_agg(p.role order by p.joined_at, p.public_id) as member_roles,
           array_agg(p.joined_at order by p.joined_at, p.public_id) as member_joined_at
    from member_profiles p where p.diary_id = diaries.id) as members
where diaries.id = any ((select app_diary_ids())::uuid[])
order by last_entry_at desc nulls last, diaries.created_at desc;
COMMIT;
\endpipeline
