-- The app spec's join_diary, kept to show why it was replaced: it counts members,
-- then inserts, with no lock in between, so concurrent joins overrun the cap.
-- Between the count and the insert it waits (up to 10 s) until another join is running too,
-- so that the race shows on every run, however a loaded machine schedules the joins; the
-- wait does not create the race, which exists with any gap at all.
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
    for attempt in 1..1000 loop
        exit when (select count(*) from pg_stat_activity a
                   where a.datname = current_database() and a.state = 'active' and a.query like '%spec_join_diary(%') >= 2;
        perform pg_sleep(0.01);
    end loop;
    -- Through add_diary_member, as every member is added (0026); its share lock on the
    -- diary does not keep another sharer out.
    perform add_diary_member(v_diary_id, p_user_id, 'member');
    return v_diary_id;
end;
$$;
