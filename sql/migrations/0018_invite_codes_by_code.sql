-- Invite codes are unique across the service, but a table sharded by diary can keep unique
-- only what holds its diary column (Citus refuses `unique (invite_code)` on diaries). The
-- code's uniqueness moves to a table keyed by the code, which maps it to its diary; on Citus
-- it is a reference table (written when a diary is made or its code replaced, both rare).
--
-- diaries.invite_code stays the diary's current code: what members see, and what join_diary
-- checks. A replaced code's row therefore answers as an invalid code without being deleted,
-- and a deleted diary's row points at nothing; neither code is ever drawn again.
create table invite_codes (
    code       text primary key check (code ~ '^[0-9A-HJKMNP-TV-Z]{10}$'),
    diary_id   uuid not null,
    created_at timestamptz not null default now()
);
insert into invite_codes (code, diary_id) select d.invite_code, d.id from diaries d;

alter table invite_codes enable row level security;
alter table invite_codes force row level security;
create policy invite_codes_select on invite_codes for select using (false);
create policy invite_codes_insert on invite_codes for insert with check (false);
create policy invite_codes_update on invite_codes for update using (false) with check (false);
create policy invite_codes_delete on invite_codes for delete using (false);

alter table diaries drop constraint diaries_invite_code_key;
create index diaries_invite_code on diaries (invite_code);

-- Claims the diary's current code. A code another diary holds fails as the unique key
-- did before (23505 on invite_codes_pkey), and the caller draws again.
create function register_invite_code(diary uuid) returns void
language plpgsql security definer
set search_path = pg_catalog, public
as $$
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

-- The diary a code names, if it is still that diary's code.
create function invite_code_diary(code text) returns uuid
language sql stable security definer
set search_path = pg_catalog, public
as $$
    select d.id from invite_codes c join diaries d on d.id = c.diary_id and d.invite_code = c.code
    where c.code = normalize_invite_code(invite_code_diary.code)
$$;

create or replace function create_diary(diary uuid, name text, type text, free_limit integer) returns void
language plpgsql security definer
set search_path = pg_catalog, public
as $$
declare
    caller constant uuid := (select app_user_id());
begin
    if caller is null then
        raise exception 'no caller' using errcode = 'ZN401';
    end if;
    perform 1 from users u where u.id = caller for update;
    if user_plan(caller) = 'free'
       and (select count(*) from diary_members m where m.user_id = caller and m.role = 'owner') >= free_limit then
        raise exception 'the free plan owns % diaries', free_limit using errcode = 'ZN006';
    end if;
    insert into diaries (id, name, type, created_by) values (diary, create_diary.name, create_diary.type, caller);
    perform register_invite_code(diary);
    insert into diary_members (diary_id, user_id, role) values (diary, caller, 'owner');
end
$$;

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

    -- By the diary's id, so that on Citus the lock goes to the diary's own shard.
    select * into found_diary
    from diaries d
    where d.id = invite_code_diary(join_diary.invite_code)
      and d.invite_code = normalize_invite_code(join_diary.invite_code)
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

revoke execute on function register_invite_code(uuid), invite_code_diary(text) from public;
grant execute on function register_invite_code(uuid), invite_code_diary(text) to diary_app;
