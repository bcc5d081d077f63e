-- Zutto Nikki: users, diaries (the tenant), members, entries and read receipts.
--
-- Every tenant table carries diary_id, and every primary key and unique constraint
-- on one includes it, so the schema can be distributed by diary_id without a
-- rewrite. The one global lookup is diaries.invite_code: a join looks a diary up by
-- code before the caller belongs to it, so that code must be unique across tenants.

create extension if not exists pgcrypto;

create function set_updated_at() returns trigger
language plpgsql
set search_path = pg_catalog, public
as $$
begin
    new.updated_at := now();
    return new;
end
$$;

create table users (
    id                 uuid primary key default gen_random_uuid(),
    apple_sub          text unique check (char_length(apple_sub) between 1 and 255),
    email              text check (char_length(email) <= 320),
    display_name       text not null default 'ユーザー' check (char_length(display_name) between 1 and 50),
    profile_image_url  text check (char_length(profile_image_url) <= 2048),
    settings           jsonb not null default '{"notification_new_entry":true,"notification_reminder":true,"reminder_time":"21:00"}'
                           check (jsonb_typeof(settings) = 'object'),
    time_zone          text not null default 'Asia/Tokyo' check (char_length(time_zone) between 1 and 64),
    premium_expires_at timestamptz,
    created_at         timestamptz not null default now(),
    updated_at         timestamptz not null default now()
);

create trigger users_set_updated_at before update on users
    for each row execute function set_updated_at();

-- Invite codes: 50 bits from pgcrypto's CSPRNG, written in Crockford base32
-- (no I, L, O or U), ten characters. The spec's md5(random()) gave 24 guessable bits.
create function generate_invite_code() returns text
language plpgsql volatile
set search_path = pg_catalog, public
as $$
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

-- What a person types: any case, hyphens or spaces, and the letters Crockford
-- reads as digits (O as 0; I and L as 1).
create function normalize_invite_code(raw text) returns text
language sql immutable
set search_path = pg_catalog, public
as $$
    select translate(upper(regexp_replace(coalesce(raw, ''), '[\s-]', '', 'g')), 'OIL', '011')
$$;

create table diaries (
    id          uuid primary key default gen_random_uuid(),
    name        text not null check (char_length(name) between 1 and 50),
    type        text not null check (type in ('couple', 'family', 'friends', 'anonymous')),
    invite_code text not null unique default generate_invite_code()
                    check (invite_code ~ '^[0-9A-HJKMNP-TV-Z]{10}$'),
    created_by  uuid references users (id) on delete set null,
    settings    jsonb not null default '{}' check (jsonb_typeof(settings) = 'object'),
    created_at  timestamptz not null default now(),
    updated_at  timestamptz not null default now()
);

create trigger diaries_set_updated_at before update on diaries
    for each row execute function set_updated_at();

create function diary_member_cap(diary_type text) returns integer
language sql immutable
set search_path = pg_catalog, public
as $$
    select case diary_type
        when 'couple' then 2
        when 'anonymous' then 2
        when 'family' then 10
        when 'friends' then 10
    end
$$;

create table diary_members (
    diary_id  uuid not null references diaries (id) on delete cascade,
    user_id   uuid not null references users (id) on delete cascade,
    role      text not null default 'member' check (role in ('owner', 'member')),
    joined_at timestamptz not null default now(),
    primary key (diary_id, user_id)
);

create index diary_members_user on diary_members (user_id, diary_id);
-- At most one owner here; the deferred trigger below makes it exactly one.
create unique index diary_members_one_owner on diary_members (diary_id) where role = 'owner';

-- Checked at commit, so a transaction may hand ownership over in two steps.
create function check_diary_has_one_owner() returns trigger
language plpgsql
set search_path = pg_catalog, public
as $$
declare
    checked_diary uuid;
begin
    if tg_table_name = 'diaries' then
        checked_diary := new.id;
    elsif tg_op = 'DELETE' then
        checked_diary := old.diary_id;
    else
        checked_diary := new.diary_id;
    end if;
    if exists (select 1 from diaries where id = checked_diary)
       and (select count(*) from diary_members where diary_id = checked_diary and role = 'owner') <> 1 then
        raise exception 'diary % must have exactly one owner', checked_diary
            using errcode = '23514', constraint = 'diary_members_exactly_one_owner';
    end if;
    return null;
end
$$;

create constraint trigger diary_members_exactly_one_owner
    after insert or update or delete on diary_members
    deferrable initially deferred
    for each row execute function check_diary_has_one_owner();

create constraint trigger diaries_exactly_one_owner
    after insert on diaries
    deferrable initially deferred
    for each row execute function check_diary_has_one_owner();

create table entries (
    diary_id   uuid not null references diaries (id) on delete cascade,
    id         uuid not null default gen_random_uuid(),
    user_id    uuid not null references users (id) on delete cascade,
    content    text not null check (char_length(content) between 1 and 10000),
    question   text check (char_length(question) <= 500),
    images     text[] not null default '{}' check (cardinality(images) <= 10),
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    primary key (diary_id, id)
);

create trigger entries_set_updated_at before update on entries
    for each row execute function set_updated_at();

-- The timeline: newest first, keyset-paginated over (created_at, id).
create index entries_timeline on entries (diary_id, created_at desc, id desc);
-- mark_as_read and the author's own lookups find an entry by id alone.
create index entries_id on entries (id);
create index entries_user on entries (user_id);

create table entry_reads (
    diary_id uuid not null,
    entry_id uuid not null,
    user_id  uuid not null references users (id) on delete cascade,
    read_at  timestamptz not null default now(),
    primary key (diary_id, entry_id, user_id),
    foreign key (diary_id, entry_id) references entries (diary_id, id) on delete cascade
);

create index entry_reads_user on entry_reads (user_id);

-- Joins by invite code without exceeding the diary's cap, however many join at once.
--
-- The diary row is locked FOR UPDATE before members are counted. Under READ
-- COMMITTED the count is a new statement with a new snapshot taken after the lock
-- was granted, so it sees every member added by an earlier lock holder, which had
-- to commit to release the lock. Joins to one diary are therefore serialized, and
-- the cap check and the insert are atomic with respect to each other.
create function join_diary(invite_code text, user_id uuid) returns uuid
language plpgsql volatile
set search_path = pg_catalog, public
as $$
declare
    joining_user constant uuid := join_diary.user_id;
    found_diary diaries%rowtype;
    member_count integer;
begin
    select * into found_diary
    from diaries d
    where d.invite_code = normalize_invite_code(join_diary.invite_code)
    for update;
    if not found then
        raise exception 'invite code is not valid' using errcode = 'ZN001';
    end if;

    if exists (select 1 from diary_members m where m.diary_id = found_diary.id and m.user_id = joining_user) then
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

-- Records that user_id has read entry_id (既読); refuses anyone outside the entry's diary.
create function mark_as_read(entry_id uuid, user_id uuid) returns timestamptz
language plpgsql volatile
set search_path = pg_catalog, public
as $$
declare
    marked_at timestamptz;
begin
    with marked as (
        insert into entry_reads (diary_id, entry_id, user_id, read_at)
        select e.diary_id, e.id, mark_as_read.user_id, now()
        from entries e
        join diary_members m on m.diary_id = e.diary_id and m.user_id = mark_as_read.user_id
        where e.id = mark_as_read.entry_id
        on conflict on constraint entry_reads_pkey do update set read_at = excluded.read_at
        returning entry_reads.read_at
    )
    select max(marked.read_at) into marked_at from marked;
    if marked_at is null then
        raise exception 'entry not found among the diaries of this user' using errcode = 'ZN003';
    end if;
    return marked_at;
end
$$;

revoke all on function join_diary(text, uuid) from public;
revoke all on function mark_as_read(uuid, uuid) from public;
revoke all on function generate_invite_code() from public;
