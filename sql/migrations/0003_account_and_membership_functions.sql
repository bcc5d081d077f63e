-- Multi-step changes that must happen as one: leaving a diary and deleting an account.
-- Both act only for the caller (app_user_id()), and hand a diary's ownership to its
-- longest-standing remaining member, or delete the diary when nobody is left.

-- Removes `target` (a member's public id: their user id, or their alias in an anonymous
-- diary) from `diary`, for the caller. Returns 'removed', or 'not_found' when the caller
-- cannot see such a member, or 'forbidden' when a member tries to remove someone else.
create function remove_diary_member(diary uuid, target uuid) returns text
language plpgsql volatile
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
    select p.user_id, p.role into removed_user, removed_role
    from member_profiles p where p.diary_id = diary and p.public_id = target;
    if removed_user is null then
        return 'not_found';
    end if;
    if removed_user <> caller and not is_diary_owner(diary) then
        return 'forbidden';
    end if;
    -- Serialise with joins and other removals on this diary.
    perform 1 from diaries d where d.id = diary for update;
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

-- Deletes the caller's account: their entries, reads, memberships and sessions go with
-- the user row; diaries they owned pass on or, left empty, are deleted.
create function delete_my_account() returns void
language plpgsql volatile
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := (select app_user_id());
    owned record;
    heir uuid;
begin
    if caller is null then
        raise exception 'no caller' using errcode = 'ZN401';
    end if;
    for owned in
        select m.diary_id from diary_members m where m.user_id = caller and m.role = 'owner' order by m.diary_id
    loop
        perform 1 from diaries d where d.id = owned.diary_id for update;
        delete from diary_members m where m.diary_id = owned.diary_id and m.user_id = caller;
        select m.user_id into heir from diary_members m
        where m.diary_id = owned.diary_id order by m.joined_at, m.user_id limit 1;
        if heir is null then
            delete from diaries d where d.id = owned.diary_id;
        else
            update diary_members m set role = 'owner' where m.diary_id = owned.diary_id and m.user_id = heir;
        end if;
    end loop;
    delete from users u where u.id = caller;
end
$$;
