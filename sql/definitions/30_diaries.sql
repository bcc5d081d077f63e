-- Definitions: diaries. Applied by `migrate` after the versioned migrations whenever this
-- file's text changes, so every statement here runs again: see sql/definitions/README.md.

-- Functions

CREATE OR REPLACE FUNCTION public.add_diary_member(diary uuid, member uuid, role text, joined_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    entries_in_diary integer;
    kind text;
    unread integer;
    alias uuid;
    joined bigint;
begin
    -- Posts, which update this row first, wait until the member is in.
    select d.entry_count, d.type into entries_in_diary, kind from diaries d where d.id = diary for no key update;
    -- The member's joins and creates take turns on the member's row (create_diary holds it
    -- already), so that two never count the same memberships; no key update, so that the
    -- member's posts, whose foreign keys share the row, pass.
    perform 1 from users u where u.id = member for no key update;
    if (select count(*) from user_diaries u where u.user_id = member) >= diaries_per_user_cap() then
        raise exception 'a user belongs to at most % diaries: leave one before joining or creating another', diaries_per_user_cap() using errcode = 'ZN007';
    end if;
    unread := coalesce(entries_in_diary, 0)
        - (select count(*) from entries e where e.diary_id = diary and e.user_id = member)
        - (select count(*) from entry_reads r
           join entries e on e.diary_id = r.diary_id and e.id = r.entry_id
           where r.diary_id = diary and r.user_id = member and e.user_id <> member);
    perform set_app_setting('app.writer', 'add_diary_member');
    insert into diary_members as m (diary_id, user_id, role, joined_at, unread_count)
    values (diary, member, add_diary_member.role, coalesce(add_diary_member.joined_at, now()), unread)
    returning m.alias_id into alias;
    joined := log_change(diary, 'member.joined', null, member, alias);
    insert into user_diaries (user_id, diary_id, role, diary_type, position_at_join)
    values (member, diary, add_diary_member.role, kind, joined - 1);
    -- A member who joins again is a member, no longer a former one.
    delete from former_members f where f.diary_id = diary and f.user_id = member;
    perform set_app_setting('app.writer', '');
    if app_user_id() is not null then
        perform refresh_app_diary_ids();
    end if;
end
$$;

COMMENT ON FUNCTION public.add_diary_member(diary uuid, member uuid, role text, joined_at timestamp with time zone) IS 'Adds a member with the unread_count the diary''s entries give them, logs member.joined and refreshes the caller''s diary ids. The only way a member is added (create_diary_as, join_diary; seeds).';

REVOKE ALL ON FUNCTION public.add_diary_member(diary uuid, member uuid, role text, joined_at timestamp with time zone) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.check_one_owner(diary uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    -- A closed diary has no member, so no owner, until a former member restores it.
    if exists (select 1 from diaries d where d.id = diary and d.closed_at is null)
       and (select count(*) from diary_members m where m.diary_id = diary and m.role = 'owner') <> 1 then
        raise exception 'diary % must have exactly one owner', diary
            using errcode = '23514', constraint = 'diary_members_exactly_one_owner';
    end if;
end
$$;

COMMENT ON FUNCTION public.check_one_owner(diary uuid) IS 'Raises 23514 (diary_members_exactly_one_owner) unless the diary, if it exists and is open, has exactly one owner. Called by the functions that add or drop members.';

CREATE OR REPLACE FUNCTION public.create_diary(diary uuid, name text, type text, free_limit integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := require_caller();
begin
    -- The id is the client's: a retry of a create that succeeded finds its diary, and the
    -- server answers it (or a conflict, if it is not what the retry asks for) before the
    -- plan's and the caps' checks, which the first create has already passed.
    if exists (select 1 from diaries d where d.id = diary) then
        return;
    end if;
    perform 1 from users u where u.id = caller for update;
    if user_plan(caller) = 'free'
       and (select count(*) from user_diaries u where u.user_id = caller and u.role = 'owner') >= free_limit then
        raise exception 'this needs premium: the free plan owns % diaries; upgrade, or leave a diary you own', free_limit using errcode = 'ZN006';
    end if;
    perform create_diary_as(caller, diary, create_diary.name, create_diary.type);
end
$$;

COMMENT ON FUNCTION public.create_diary(diary uuid, name text, type text, free_limit integer) IS 'Creates a diary with the caller as its owner, which the caller could not insert as themself (the diary is invisible to them until the membership exists), and claims its invite code. A free user owns at most free_limit diaries (ZN006), counted under the caller''s row lock. Does nothing when a diary with this id exists: the id is the client''s, and a retry answers what the first create made.';

REVOKE ALL ON FUNCTION public.create_diary(diary uuid, name text, type text, free_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.create_diary(diary uuid, name text, type text, free_limit integer) TO diary_app;

CREATE OR REPLACE FUNCTION public.create_diary_as(owner uuid, diary uuid, name text, type text, invite_code text DEFAULT NULL::text, created_at timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    perform set_app_setting('app.writer', 'create_diary_as');
    insert into diaries (id, name, type, created_by, invite_code, created_at)
    values (diary, create_diary_as.name, create_diary_as.type, owner,
        coalesce(create_diary_as.invite_code, generate_invite_code()), coalesce(create_diary_as.created_at, now()));
    perform set_app_setting('app.writer', '');
    perform register_invite_code(diary);
    perform add_diary_member(diary, owner, 'owner', create_diary_as.created_at);
    perform check_one_owner(diary);
end
$$;

COMMENT ON FUNCTION public.create_diary_as(owner uuid, diary uuid, name text, type text, invite_code text, created_at timestamp with time zone) IS 'A diary with its owner and registered invite code, for create_diary, operators and seeds (not granted to diary_app).';

REVOKE ALL ON FUNCTION public.create_diary_as(owner uuid, diary uuid, name text, type text, invite_code text, created_at timestamp with time zone) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.diaries_of_users(users uuid[]) RETURNS TABLE(diary_id uuid, user_ids uuid[])
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query select u.diary_id, array_agg(u.user_id) from user_diaries u where u.user_id = any (users) group by u.diary_id;
end
$$;

COMMENT ON FUNCTION public.diaries_of_users(users uuid[]) IS 'For the servers'' realtime feeds: the diaries of these users, with who of them is in each.';

REVOKE ALL ON FUNCTION public.diaries_of_users(users uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.diaries_of_users(users uuid[]) TO diary_app;

CREATE OR REPLACE FUNCTION public.diaries_per_user_cap() RETURNS integer
    LANGUAGE sql IMMUTABLE
    AS $$ select 100 $$;

COMMENT ON FUNCTION public.diaries_per_user_cap() IS 'How many diaries a user may belong to (ZN007 beyond): each is a position in their realtime cursor.';

CREATE OR REPLACE FUNCTION public.diary_member_cap(diary_type text) RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    select case diary_type
        when 'couple' then 2
        when 'anonymous' then 2
        when 'family' then 10
        when 'friends' then 10
    end
$$;

COMMENT ON FUNCTION public.diary_member_cap(diary_type text) IS 'The most members a diary of this type may have: couple and anonymous 2, family and friends 10. join_diary checks it under the diary''s row lock.';

REVOKE ALL ON FUNCTION public.diary_member_cap(diary_type text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.diary_member_cap(diary_type text) TO diary_app;

CREATE OR REPLACE FUNCTION public.drop_diary_member(diary uuid, member uuid) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    alias uuid;
    dropped_role text;
    departed_at bigint;
begin
    perform 1 from diaries d where d.id = diary for no key update;
    perform set_app_setting('app.writer', 'drop_diary_member');
    delete from diary_members m where m.diary_id = diary and m.user_id = member
    returning m.alias_id, m.role into alias, dropped_role;
    delete from user_diaries u where u.user_id = member and u.diary_id = diary;
    perform set_app_setting('app.writer', '');
    if dropped_role is null then
        return null;
    end if;
    departed_at := log_change(diary, 'member.left', null, member, alias);
    -- What they wrote stays theirs to export for the window, and the diary theirs to
    -- restore should it close with nothing changed after they left (restore_diary); an
    -- account being deleted (forget_user) keeps no such right. A member removed by someone
    -- else (the owner, through remove_diary_member) keeps their own entries, never the right
    -- to open the diary again.
    if member::text is distinct from current_setting('app.forgetting_user', true) then
        insert into former_members as f (diary_id, user_id, left_at, diary_name, removed, left_position)
        select d.id, member, now(), d.name, coalesce(app_user_id() <> member, false), departed_at from diaries d where d.id = diary
        on conflict (diary_id, user_id) do update
            set left_at = excluded.left_at, diary_name = excluded.diary_name, removed = excluded.removed, left_position = excluded.left_position;
    end if;
    if dropped_role = 'owner' then
        perform hand_on_or_close(diary);
    end if;
    perform check_one_owner(diary);
    if app_user_id() is not null then
        perform refresh_app_diary_ids();
    end if;
    return dropped_role;
end
$$;

COMMENT ON FUNCTION public.drop_diary_member(diary uuid, member uuid) IS 'Removes a member, records them as a former member with the diary''s name then and whether someone else removed them (unless forget_user is deleting their account), logs member.left, hands ownership on (or closes the diary) when the owner leaves, and refreshes the caller''s diary ids. Returns the role they had, or null.';

REVOKE ALL ON FUNCTION public.drop_diary_member(diary uuid, member uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.forbid_diary_type_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    raise exception 'a diary''s type cannot change' using errcode = '23514', constraint = 'diaries_type_fixed';
end
$$;

COMMENT ON FUNCTION public.forbid_diary_type_change() IS 'Trigger: refuses any change of a diary''s type (diaries_type_fixed), since the type sets the member cap and an anonymous diary turned into another type would unmask its members.';

REVOKE ALL ON FUNCTION public.forbid_diary_type_change() FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.forget_diary(diary uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    insert into photo_garbage (content_hash)
    select distinct p.content_hash from entry_photos p where p.diary_id = diary
    on conflict (content_hash) do nothing;
    perform set_app_setting('app.writer', 'forget_diary');
    delete from entry_reads r where r.diary_id = diary;
    delete from entry_photos p where p.diary_id = diary;
    delete from entries e where e.diary_id = diary;
    delete from diary_members m where m.diary_id = diary;
    delete from user_diaries u where u.diary_id = diary;
    delete from former_members f where f.diary_id = diary;
    -- A deleted diary leaves nothing behind, its history included.
    delete from change_log c where c.diary_id = diary;
    delete from diaries d where d.id = diary;
    perform set_app_setting('app.writer', '');
end
$$;

COMMENT ON FUNCTION public.forget_diary(diary uuid) IS 'Deletes a diary nobody is left in, with its entries, receipts, photos (queued as garbage), members, former members and change log. Nothing is logged: nobody is left to tell. hand_on_or_close calls it for a diary nobody could restore; the closed-diary worker (purge_closed_diaries) once its window has passed.';

REVOKE ALL ON FUNCTION public.forget_diary(diary uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.generate_invite_code() RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    alphabet constant text := '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    random_bytes bytea := gen_random_bytes(7);
    bits bigint := 0;
    code text := '';
begin
    for i in 0..6 loop
        bits := (bits << 8) | get_byte(random_bytes, i);
    end loop;
    -- 56 random bits; the ten 5-bit groups use the low 50.
    for i in 1..10 loop
        code := code || substr(alphabet, (bits & 31)::int + 1, 1);
        bits := bits >> 5;
    end loop;
    return code;
end
$$;

COMMENT ON FUNCTION public.generate_invite_code() IS 'Draws an invite code: 50 bits from pgcrypto''s CSPRNG, written as ten characters of Crockford base32 (no I, L, O or U), so that codes cannot be guessed. The default of diaries.invite_code, and what replacing a diary''s code sets.';

REVOKE ALL ON FUNCTION public.generate_invite_code() FROM PUBLIC;
GRANT ALL ON FUNCTION public.generate_invite_code() TO diary_app;

CREATE OR REPLACE FUNCTION public.hand_on_or_close(diary uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    heir uuid;
begin
    select m.user_id into heir from diary_members m where m.diary_id = diary order by m.joined_at, m.user_id limit 1;
    if heir is null then
        -- Closed, never deleted, while a former member may still want it back or their
        -- entries out of it; a diary with no former member (its last account deleted, and
        -- nobody left it before) has nobody to keep it for.
        if exists (select 1 from former_members f where f.diary_id = diary) then
            update diaries d set closed_at = now(), purge_at = null where d.id = diary;
            perform announce('closed_diaries');
        else
            perform forget_diary(diary);
        end if;
        return;
    end if;
    perform set_app_setting('app.writer', 'hand_on_or_close');
    update diary_members m set role = 'owner' where m.diary_id = diary and m.user_id = heir;
    update user_diaries u set role = 'owner' where u.user_id = heir and u.diary_id = diary;
    perform set_app_setting('app.writer', '');
end
$$;

COMMENT ON FUNCTION public.hand_on_or_close(diary uuid) IS 'After the owner leaves: the longest-standing member becomes owner; when nobody is left, the diary is closed (kept for its former members, announced on closed_diaries), or forgotten when it has no former member.';

REVOKE ALL ON FUNCTION public.hand_on_or_close(diary uuid) FROM PUBLIC;

CREATE OR REPLACE FUNCTION public.invite_code_diary(code text) RETURNS uuid
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    normalized constant text := normalize_invite_code(invite_code_diary.code);
    named uuid;
begin
    select c.diary_id into named from invite_codes c where c.code = normalized;
    -- A closed diary's code names nothing: only its former members may bring it back.
    return (select d.id from diaries d where d.id = named and d.invite_code = normalized and d.closed_at is null);
end
$$;

COMMENT ON FUNCTION public.invite_code_diary(code text) IS 'The diary an invite code names, if it is still that diary''s current code and the diary is open; a replaced code, or a closed diary''s, answers as invalid. join_diary finds the diary by id through it, so that on Citus the lock goes to the diary''s own shard.';

REVOKE ALL ON FUNCTION public.invite_code_diary(code text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.invite_code_diary(code text) TO diary_app;

CREATE OR REPLACE FUNCTION public.invite_preview(code text) RETURNS TABLE(diary_type text, member_count integer)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    target constant uuid := invite_code_diary(invite_preview.code);
    kind text;
begin
    if target is null then
        return;
    end if;
    select d.type into kind from diaries d where d.id = target;
    return query select kind, (select count(*)::integer from diary_members m where m.diary_id = target);
end
$$;

COMMENT ON FUNCTION public.invite_preview(code text) IS 'What a person about to join sees of the diary an invite code opens (invite_code_diary, as the join): its type and how many members it has, never its name or who they are. No row for a code that opens nothing.';

REVOKE ALL ON FUNCTION public.invite_preview(code text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.invite_preview(code text) TO diary_app;

CREATE OR REPLACE FUNCTION public.join_diary(invite_code text, user_id uuid) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    joining_user constant uuid := join_diary.user_id;
    target constant uuid := invite_code_diary(join_diary.invite_code);
    found_diary diaries%rowtype;
    member_count integer;
begin
    if joining_user is distinct from (select app_user_id()) then
        raise exception 'join_diary joins only the caller' using errcode = '42501';
    end if;

    -- By the diary's id, a value rather than a call, so that on Citus the lock goes to the
    -- diary's own shard: Citus refuses FOR UPDATE on a query it cannot route.
    -- Open under the lock too: the last member's leave may have closed it while this waited.
    select * into found_diary
    from diaries d
    where d.id = target and d.invite_code = normalize_invite_code(join_diary.invite_code) and d.closed_at is null
    for update;
    if not found then
        raise exception 'no diary has this invite code' using errcode = 'ZN001';
    end if;

    if exists (select 1 from diary_members m where m.diary_id = found_diary.id and m.user_id = joining_user) then
        -- A concurrent join of ours committed after this transaction read its diaries.
        perform refresh_app_diary_ids();
        return found_diary.id;
    end if;

    select count(*) into member_count from diary_members m where m.diary_id = found_diary.id;
    if member_count >= diary_member_cap(found_diary.type) then
        raise exception 'this diary has no room for another member' using errcode = 'ZN002';
    end if;

    perform add_diary_member(found_diary.id, joining_user, 'member');
    return found_diary.id;
end
$$;

COMMENT ON FUNCTION public.join_diary(invite_code text, user_id uuid) IS 'Joins the caller (user_id must be app_user_id()) to the diary an invite code names, without exceeding its cap however many join at once: the diary row is locked before the members are counted (ZN001 an invalid code, ZN002 a full diary). Runs as the owner because a joiner cannot see the diary yet; joining again returns the diary and refreshes the caller''s visible diaries.';

REVOKE ALL ON FUNCTION public.join_diary(invite_code text, user_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.join_diary(invite_code text, user_id uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.members_of_diaries(diaries uuid[], users uuid[]) RETURNS TABLE(diary_id uuid, user_ids uuid[])
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query select u.diary_id, array_agg(u.user_id) from user_diaries u
        where u.diary_id = any (diaries) and u.user_id = any (users) group by u.diary_id;
end
$$;

COMMENT ON FUNCTION public.members_of_diaries(diaries uuid[], users uuid[]) IS 'For the servers'' realtime feeds: who of these users is in each of these diaries.';

REVOKE ALL ON FUNCTION public.members_of_diaries(diaries uuid[], users uuid[]) FROM PUBLIC;
GRANT ALL ON FUNCTION public.members_of_diaries(diaries uuid[], users uuid[]) TO diary_app;

CREATE OR REPLACE FUNCTION public.normalize_invite_code(raw text) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    select translate(upper(regexp_replace(coalesce(raw, ''), '[\s-]', '', 'g')), 'OIL', '011')
$$;

COMMENT ON FUNCTION public.normalize_invite_code(raw text) IS 'An invite code as a person types it, made comparable: upper case, without hyphens or spaces, and with the letters Crockford base32 reads as digits (O as 0, I and L as 1) replaced.';

REVOKE ALL ON FUNCTION public.normalize_invite_code(raw text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.normalize_invite_code(raw text) TO diary_app;

CREATE OR REPLACE FUNCTION public.register_invite_code(diary uuid) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    current_code text;
begin
    select d.invite_code into current_code from diaries d where d.id = diary;
    if current_code is null then
        return;
    end if;
    insert into invite_codes (code, diary_id) values (current_code, diary) on conflict (code) do nothing;
    if not exists (select 1 from invite_codes c where c.code = current_code and c.diary_id = diary) then
        raise exception 'invite code % is taken', current_code using errcode = '23505', constraint = 'invite_codes_pkey';
    end if;
end
$$;

COMMENT ON FUNCTION public.register_invite_code(diary uuid) IS 'Claims the diary''s current invite code in invite_codes, which keeps codes unique across the service where a table sharded by diary cannot. A code another diary holds fails with 23505 on invite_codes_pkey, and the caller draws again.';

REVOKE ALL ON FUNCTION public.register_invite_code(diary uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.register_invite_code(diary uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.remove_diary_member(diary uuid, target uuid) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    caller constant uuid := (select app_user_id());
    removed_user uuid;
begin
    if caller is null or not is_diary_member(diary) then
        return 'not_found';
    end if;
    -- Serialise with joins and other removals on this diary.
    perform 1 from diaries d where d.id = diary for update;
    select p.user_id into removed_user from member_profiles p where p.diary_id = diary and p.public_id = target;
    if removed_user is null then
        return 'not_found';
    end if;
    if removed_user <> caller and not is_diary_owner(diary) then
        return 'forbidden';
    end if;
    perform drop_diary_member(diary, removed_user);
    return 'removed';
end
$$;

COMMENT ON FUNCTION public.remove_diary_member(diary uuid, target uuid) IS 'Removes target (a member''s public id: their user id, or their alias in an anonymous diary) from the diary for the caller, and returns removed, not_found (no such member the caller can see) or forbidden (a member removing someone else). Everything is read under the diary''s row lock, and a removed owner''s role passes to the longest-standing member, or the diary is closed when nobody is left.';

REVOKE ALL ON FUNCTION public.remove_diary_member(diary uuid, target uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.remove_diary_member(diary uuid, target uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.rename_diary(diary uuid, name text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    verdict constant text := diary_verdict(diary);
begin
    if verdict <> 'permitted' then
        return verdict;
    end if;
    perform set_app_setting('app.writer', 'rename_diary');
    update diaries d set name = rename_diary.name where d.id = diary and d.name is distinct from rename_diary.name;
    perform set_app_setting('app.writer', '');
    if found then
        perform log_change(diary, 'diary.updated');
    end if;
    return 'renamed';
end
$$;

COMMENT ON FUNCTION public.rename_diary(diary uuid, name text) IS 'PATCH diary: the owner renames it; diary.updated is logged when the name changed. Answers renamed, not_found or forbidden.';

REVOKE ALL ON FUNCTION public.rename_diary(diary uuid, name text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.rename_diary(diary uuid, name text) TO diary_app;

CREATE OR REPLACE FUNCTION public.rotate_invite_code(diary uuid) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
declare
    verdict constant text := diary_verdict(diary);
    -- Drawn first and bound as a value: Citus refuses a volatile function in an UPDATE of a
    -- distributed table.
    code text;
begin
    if verdict <> 'permitted' then
        return verdict;
    end if;
    code := generate_invite_code();
    update diaries d set invite_code = code where d.id = diary;
    perform register_invite_code(diary);
    return 'rotated';
end
$$;

COMMENT ON FUNCTION public.rotate_invite_code(diary uuid) IS 'POST invite-code: the owner draws a new code and registers it; the old one stops working. Answers rotated, not_found or forbidden.';

REVOKE ALL ON FUNCTION public.rotate_invite_code(diary uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.rotate_invite_code(diary uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.diary_response(diary uuid) RETURNS TABLE(id uuid, name text, type text, invite_code text, role text, created_at timestamp with time zone, member_count integer, last_entry_at timestamp with time zone, unread_count integer, member_ids uuid[], member_names text[], member_images text[], member_roles text[], member_joined_at timestamp with time zone[])
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
#variable_conflict use_column
declare
    previous constant text[] := assume_server_role();
begin
    return query
        select diaries.id, diaries.name, diaries.type, diaries.invite_code, me.role, diaries.created_at,
            cardinality(members.member_ids) as member_count,
            (select e.created_at from entries e where e.diary_id = diary order by e.created_at desc limit 1) as last_entry_at,
            me.unread_count,
            members.member_ids, members.member_names, members.member_images, members.member_roles, members.member_joined_at
        from diaries
        join diary_members me on me.diary_id = diary and me.user_id = app_user_id()
        cross join lateral (
            select array_agg(p.public_id order by p.joined_at, p.public_id) as member_ids,
                   array_agg(p.display_name order by p.joined_at, p.public_id) as member_names,
                   array_agg(p.profile_photo order by p.joined_at, p.public_id) as member_images,
                   array_agg(p.role order by p.joined_at, p.public_id) as member_roles,
                   array_agg(p.joined_at order by p.joined_at, p.public_id) as member_joined_at
            from member_profiles p where p.diary_id = diary) as members
        where diaries.id = diary;
    if previous is not null then
        perform leave_server_role(previous);
    end if;
end
$$;

COMMENT ON FUNCTION public.diary_response(diary uuid) IS 'A diary as the caller sees it, through their policies and member_profiles'' aliases, as DiaryRepository.diaryColumns reads it (ReadBackTests): what a write of the diary answers, in the write''s own transaction. On a Citus worker it runs in the owner''s connection (read_back_diary), as diary_app (assume_server_role), its reads nested inside the routed statement on the diary''s own shards.';

REVOKE ALL ON FUNCTION public.diary_response(diary uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.diary_response(diary uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.read_back_diary(diary uuid) RETURNS TABLE(id uuid, name text, type text, invite_code text, role text, created_at timestamp with time zone, member_count integer, last_entry_at timestamp with time zone, unread_count integer, member_ids uuid[], member_names text[], member_images text[], member_roles text[], member_joined_at timestamp with time zone[])
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query select r.* from diaries d cross join lateral diary_response(d.id) r where d.id = read_back_diary.diary;
end
$$;

COMMENT ON FUNCTION public.read_back_diary(diary uuid) IS 'diary_response on a Citus coordinator, in a write''s transaction: routed to the diary''s shard as the owner, so that it runs in the connection that made the write''s changes there, the only one that sees them before the COMMIT (Citus keeps one connection a role to each node). It reads nothing as the owner: diary_response takes the caller''s role first.';

REVOKE ALL ON FUNCTION public.read_back_diary(diary uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.read_back_diary(diary uuid) TO diary_app;

-- Views

CREATE OR REPLACE VIEW public.member_profiles WITH (security_invoker='true') AS
 SELECT m.diary_id,
    m.user_id,
    m.role,
    m.joined_at,
    ((d.type = 'anonymous'::text) AND (m.user_id IS DISTINCT FROM public.app_user_id())) AS is_hidden,
        CASE
            WHEN ((d.type = 'anonymous'::text) AND (m.user_id IS DISTINCT FROM public.app_user_id())) THEN m.alias_id
            ELSE m.user_id
        END AS public_id,
        CASE
            WHEN ((d.type = 'anonymous'::text) AND (m.user_id IS DISTINCT FROM public.app_user_id())) THEN ('匿名'::text || row_number() OVER (PARTITION BY m.diary_id ORDER BY m.joined_at, m.alias_id))
            ELSE u.display_name
        END AS display_name,
        CASE
            WHEN ((d.type = 'anonymous'::text) AND (m.user_id IS DISTINCT FROM public.app_user_id())) THEN NULL::text
            ELSE u.profile_image_url
        END AS profile_image_url,
        CASE
            WHEN ((d.type = 'anonymous'::text) AND (m.user_id IS DISTINCT FROM public.app_user_id())) THEN NULL::text
            ELSE (((((f.id)::text || ' '::text) || f.content_hash) || ' '::text) || f.content_type)
        END AS profile_photo
   FROM (((public.diary_members m
     JOIN public.diaries d ON ((d.id = m.diary_id)))
     LEFT JOIN public.users u ON ((u.id = m.user_id)))
     LEFT JOIN public.profile_photos f ON ((f.user_id = m.user_id)));

GRANT SELECT ON TABLE public.member_profiles TO diary_app;

-- Policies

DROP POLICY IF EXISTS diaries_delete ON public.diaries;
CREATE POLICY diaries_delete ON public.diaries FOR DELETE USING (public.is_diary_owner(id));

DROP POLICY IF EXISTS diaries_insert ON public.diaries;
CREATE POLICY diaries_insert ON public.diaries FOR INSERT WITH CHECK ((created_by = ( SELECT public.app_user_id() AS app_user_id)));

DROP POLICY IF EXISTS diaries_select ON public.diaries;
CREATE POLICY diaries_select ON public.diaries FOR SELECT USING (((id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[])) IS TRUE));

DROP POLICY IF EXISTS diaries_update ON public.diaries;
CREATE POLICY diaries_update ON public.diaries FOR UPDATE USING ((id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[]))) WITH CHECK (public.is_diary_owner(id));

DROP POLICY IF EXISTS diary_members_delete ON public.diary_members;
CREATE POLICY diary_members_delete ON public.diary_members FOR DELETE USING (((diary_id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[])) AND ((user_id = ( SELECT public.app_user_id() AS app_user_id)) OR public.is_diary_owner(diary_id))));

DROP POLICY IF EXISTS diary_members_insert ON public.diary_members;
CREATE POLICY diary_members_insert ON public.diary_members FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS diary_members_select ON public.diary_members;
CREATE POLICY diary_members_select ON public.diary_members FOR SELECT USING ((diary_id = ANY (( SELECT public.app_diary_ids() AS app_diary_ids)::uuid[])));

DROP POLICY IF EXISTS diary_members_update ON public.diary_members;
CREATE POLICY diary_members_update ON public.diary_members FOR UPDATE USING (false) WITH CHECK (false);

DROP POLICY IF EXISTS invite_codes_delete ON public.invite_codes;
CREATE POLICY invite_codes_delete ON public.invite_codes FOR DELETE USING (false);

DROP POLICY IF EXISTS invite_codes_insert ON public.invite_codes;
CREATE POLICY invite_codes_insert ON public.invite_codes FOR INSERT WITH CHECK (false);

DROP POLICY IF EXISTS invite_codes_select ON public.invite_codes;
CREATE POLICY invite_codes_select ON public.invite_codes FOR SELECT USING (false);

DROP POLICY IF EXISTS invite_codes_update ON public.invite_codes;
CREATE POLICY invite_codes_update ON public.invite_codes FOR UPDATE USING (false) WITH CHECK (false);

-- Triggers

CREATE OR REPLACE TRIGGER diaries_deleted_by_forget_diary BEFORE DELETE ON public.diaries FOR EACH ROW EXECUTE FUNCTION public.refuse_direct_write('forget_diary');

CREATE OR REPLACE TRIGGER diaries_made_by_create_diary BEFORE INSERT ON public.diaries FOR EACH STATEMENT EXECUTE FUNCTION public.refuse_direct_write('create_diary_as');

CREATE OR REPLACE TRIGGER diaries_renamed_by_rename_diary BEFORE UPDATE OF name ON public.diaries FOR EACH ROW WHEN ((old.name IS DISTINCT FROM new.name)) EXECUTE FUNCTION public.refuse_direct_write('rename_diary');

CREATE OR REPLACE TRIGGER diaries_set_updated_at BEFORE UPDATE OF name, invite_code, settings ON public.diaries FOR EACH ROW EXECUTE FUNCTION public.set_updated_at();

CREATE OR REPLACE TRIGGER diaries_type_fixed BEFORE UPDATE OF type ON public.diaries FOR EACH ROW WHEN ((old.type IS DISTINCT FROM new.type)) EXECUTE FUNCTION public.forbid_diary_type_change();

CREATE OR REPLACE TRIGGER diary_members_added_by_add_diary_member BEFORE INSERT ON public.diary_members FOR EACH STATEMENT EXECUTE FUNCTION public.refuse_direct_write('add_diary_member');

CREATE OR REPLACE TRIGGER diary_members_dropped_by_drop_diary_member BEFORE DELETE ON public.diary_members FOR EACH ROW EXECUTE FUNCTION public.refuse_direct_write('drop_diary_member', 'forget_diary', 'forget_user');

CREATE OR REPLACE TRIGGER diary_members_owner_by_hand_on_or_close BEFORE UPDATE OF role ON public.diary_members FOR EACH ROW WHEN ((old.role IS DISTINCT FROM new.role)) EXECUTE FUNCTION public.refuse_direct_write('hand_on_or_close');

CREATE OR REPLACE TRIGGER user_diaries_kept_by_the_membership_functions BEFORE INSERT OR DELETE OR UPDATE ON public.user_diaries FOR EACH ROW EXECUTE FUNCTION public.refuse_direct_write('add_diary_member', 'drop_diary_member', 'hand_on_or_close', 'forget_diary', 'forget_user');
