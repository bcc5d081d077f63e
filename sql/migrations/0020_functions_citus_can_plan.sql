-- Citus cannot plan a query over its tables inside a LANGUAGE sql function that takes
-- parameters ("could not create distributed plan … the use of parameters in SQL
-- functions"), nor a subquery correlated with a reference table. These functions read
-- diary tables, so they are written in PL/pgSQL, whose queries Citus routes like any other;
-- user_plan reads the caller's row first and then asks about a premium partner in a query
-- of its own. On one PostgreSQL they answer as before.
create or replace function user_plan(user_id uuid) returns text
language plpgsql stable security definer
set search_path = pg_catalog, public
as $$
declare
    account users%rowtype;
begin
    select * into account from users u where u.id = user_plan.user_id;
    if not found then
        return null;
    end if;
    if account.premium_expires_at > now() then
        return case when account.premium_couple then 'couple' else 'premium' end;
    end if;
    if exists (
        select 1 from diary_members me
        join diaries d on d.id = me.diary_id and d.type = 'couple'
        join diary_members partner on partner.diary_id = me.diary_id and partner.user_id <> me.user_id
        join users p on p.id = partner.user_id
        where me.user_id = account.id and p.premium_couple and p.premium_expires_at > now()
    ) then
        return 'couple';
    end if;
    return 'free';
end
$$;

create or replace function is_diary_member(diary uuid) returns boolean
language plpgsql stable security definer
set search_path = pg_catalog, public
as $$
begin
    return exists (select 1 from diary_members m where m.diary_id = diary and m.user_id = app_user_id());
end
$$;

create or replace function is_diary_owner(diary uuid) returns boolean
language plpgsql stable security definer
set search_path = pg_catalog, public
as $$
begin
    return exists (select 1 from diary_members m where m.diary_id = diary and m.user_id = app_user_id() and m.role = 'owner');
end
$$;

create or replace function push_author_name(in_diary uuid, author uuid) returns text
language plpgsql stable security definer
set search_path = pg_catalog, public
as $$
declare
    diary_type text;
    joined timestamptz;
    alias uuid;
begin
    select d.type, m.joined_at, m.alias_id into diary_type, joined, alias
    from diaries d join diary_members m on m.diary_id = d.id and m.user_id = author
    where d.id = in_diary;
    if not found then
        return null;
    end if;
    if diary_type = 'anonymous' then
        return '匿名' || (select count(*) from diary_members o
                         where o.diary_id = in_diary and (o.joined_at, o.alias_id) <= (joined, alias));
    end if;
    return (select u.display_name from users u where u.id = author);
end
$$;

create or replace function photo_file(photo_id uuid) returns table (content_hash text, content_type text, bytes integer)
language plpgsql stable security definer
set search_path = pg_catalog, public
as $$
begin
    return query select p.content_hash, p.content_type, p.bytes from entry_photos p where p.id = photo_id limit 1;
    if not found then
        return query select u.content_hash, u.content_type, u.bytes from photo_uploads u where u.id = photo_id limit 1;
    end if;
end
$$;

create or replace function invite_code_diary(code text) returns uuid
language plpgsql stable security definer
set search_path = pg_catalog, public
as $$
declare
    normalized constant text := normalize_invite_code(invite_code_diary.code);
    named uuid;
begin
    select c.diary_id into named from invite_codes c where c.code = normalized;
    return (select d.id from diaries d where d.id = named and d.invite_code = normalized);
end
$$;
