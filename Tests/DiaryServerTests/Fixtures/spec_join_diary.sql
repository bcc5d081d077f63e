-- The app spec's join_diary, kept to show why it was replaced: it counts members,
-- then inserts, with no lock in between, so concurrent joins overrun the cap.
-- pg_sleep widens the gap between the count and the insert so that the race shows
-- on every run; it does not create the race, which exists with any gap at all.
create function spec_join_diary(p_invite_code text, p_user_id uuid) returns uuid
language plpgsql
as $$
declare
    v_diary_id uuid;
    v_type text;
    v_member_count integer;
    v_max_members integer;
begin
    select id, type into v_diary_id, v_type from diaries where invite_code = upper(p_invite_code);
    if v_diary_id is null then
        raise exception 'Invalid invite code';
    end if;
    select count(*) into v_member_count from diary_members where diary_id = v_diary_id;
    v_max_members := case v_type when 'couple' then 2 when 'anonymous' then 2 else 10 end;
    if v_member_count >= v_max_members then
        raise exception 'Diary is full' using errcode = 'ZN002';
    end if;
    perform pg_sleep(0.05);
    insert into diary_members (diary_id, user_id, role) values (v_diary_id, p_user_id, 'member');
    return v_diary_id;
end;
$$;
