-- A request's visible diaries (app.diary_ids) are read once, by authenticate(), when its
-- transaction starts, and again by a trigger whenever the request itself adds or removes
-- a membership. A membership that a concurrent request commits meanwhile is in neither.
--
-- join_diary: the same user joining twice at once (a double tap, a client's retry) found
-- itself a member already, made no row, and so never refreshed: the diary read that
-- follows in the same transaction answered 404. A join now refreshes on that path too.
create or replace function join_diary(invite_code text, user_id uuid) returns uuid
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    joining_user constant uuid := join_diary.user_id;
    found_diary diaries%rowtype;
    member_count integer;
begin
    if joining_user is distinct from (select app_user_id()) then
        raise exception 'join_diary joins only the caller' using errcode = '42501';
    end if;

    select * into found_diary
    from diaries d
    where d.invite_code = normalize_invite_code(join_diary.invite_code)
    for update;
    if not found then
        raise exception 'invite code is not valid' using errcode = 'ZN001';
    end if;

    if exists (select 1 from diary_members m where m.diary_id = found_diary.id and m.user_id = joining_user) then
        -- A concurrent join of ours committed after this transaction read its diaries.
        perform refresh_app_diary_ids();
        return found_diary.id;
    end if;

    select count(*) into member_count from diary_members m where m.diary_id = found_diary.id;
    if member_count >= diary_member_cap(found_diary.type) then
        raise exception 'diary is full' using errcode = 'ZN002';
    end if;

    insert into diary_members (diary_id, user_id, role) values (found_diary.id, joining_user, 'member');
    return found_diary.id;
end
$$;

-- remove_diary_member read the removed member's role before it locked the diary, so a
-- member promoted to owner by a concurrent leave was removed as a plain member, leaving
-- the diary without an owner. The lock now comes first, and everything is read under it.
create or replace function remove_diary_member(diary uuid, target uuid) returns text
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := (select app_user_id());
    removed_user uuid;
    removed_role text;
    heir uuid;
begin
    if caller is null or not is_diary_member(diary) then
        return 'not_found';
    end if;
    -- Serialise with joins and other removals on this diary.
    perform 1 from diaries d where d.id = diary for update;
    select p.user_id, p.role into removed_user, removed_role
    from member_profiles p where p.diary_id = diary and p.public_id = target;
    if removed_user is null then
        return 'not_found';
    end if;
    if removed_user <> caller and not is_diary_owner(diary) then
        return 'forbidden';
    end if;
    delete from diary_members m where m.diary_id = diary and m.user_id = removed_user;
    if removed_role = 'owner' then
        select m.user_id into heir from diary_members m where m.diary_id = diary order by m.joined_at, m.user_id limit 1;
        if heir is null then
            delete from diaries d where d.id = diary;
        else
            update diary_members m set role = 'owner' where m.diary_id = diary and m.user_id = heir;
        end if;
    end if;
    return 'removed';
end
$$;
