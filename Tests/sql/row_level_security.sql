-- pgTAP: the row-level security of sql/migrations, checked inside the database.
-- Run by Tests/sql/run-pgtap.sh (part of `make test`) on a freshly migrated database.
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

begin;
set search_path = public, tap;
select plan(91);

-- Two users, each alone in their own diary with an entry and a read.
select add_user('aaaaaaaa-0000-0000-0000-000000000001', 'A'), add_user('bbbbbbbb-0000-0000-0000-000000000002', 'B');
insert into sessions (id, user_id) values
    ('aaaaaaaa-5e55-0000-0000-000000000001', 'aaaaaaaa-0000-0000-0000-000000000001'),
    ('bbbbbbbb-5e55-0000-0000-000000000002', 'bbbbbbbb-0000-0000-0000-000000000002');
select create_diary_as('aaaaaaaa-0000-0000-0000-000000000001', 'aaaaaaaa-d1a2-0000-0000-000000000001', 'A の日記', 'couple'),
       create_diary_as('bbbbbbbb-0000-0000-0000-000000000002', 'bbbbbbbb-d1a2-0000-0000-000000000002', 'B の日記', 'couple');
select post_entry_as('aaaaaaaa-0000-0000-0000-000000000001', 'aaaaaaaa-d1a2-0000-0000-000000000001', 'aaaaaaaa-e000-0000-0000-000000000001', 'A の秘密');
select post_entry_as('bbbbbbbb-0000-0000-0000-000000000002', 'bbbbbbbb-d1a2-0000-0000-000000000002', 'bbbbbbbb-e000-0000-0000-000000000002', 'B の秘密');
select mark_as_read_as('aaaaaaaa-0000-0000-0000-000000000001', 'aaaaaaaa-d1a2-0000-0000-000000000001', 'aaaaaaaa-e000-0000-0000-000000000001');
select mark_as_read_as('bbbbbbbb-0000-0000-0000-000000000002', 'bbbbbbbb-d1a2-0000-0000-000000000002', 'bbbbbbbb-e000-0000-0000-000000000002');
insert into devices (token, user_id, environment) values
    (repeat('a', 64), 'aaaaaaaa-0000-0000-0000-000000000001', 'sandbox'),
    (repeat('b', 64), 'bbbbbbbb-0000-0000-0000-000000000002', 'production');
-- A's entry has a photo; A and B each have an upload not attached yet.
insert into entry_photos (diary_id, id, entry_id, position, uploader_id, content_hash, content_type, bytes, width, height, created_at) values
    ('aaaaaaaa-d1a2-0000-0000-000000000001', 'aaaaaaaa-9000-0000-0000-000000000001', 'aaaaaaaa-e000-0000-0000-000000000001', 0,
     'aaaaaaaa-0000-0000-0000-000000000001', repeat('a', 64), 'image/jpeg', 100, 10, 10, now());
insert into photo_uploads (id, uploader_id, content_hash, content_type, bytes, width, height) values
    ('aaaaaaaa-9000-0000-0000-000000000002', 'aaaaaaaa-0000-0000-0000-000000000001', repeat('c', 64), 'image/png', 100, 10, 10),
    ('bbbbbbbb-9000-0000-0000-000000000002', 'bbbbbbbb-0000-0000-0000-000000000002', repeat('b', 64), 'image/png', 100, 10, 10);
-- A has a profile photo, written as set_profile_photo writes it.
select set_config('app.writer', 'set_profile_photo', true);
insert into profile_photos (user_id, id, content_hash, content_type, bytes, width, height) values
    ('aaaaaaaa-0000-0000-0000-000000000001', 'aaaaaaaa-9000-0000-0000-000000000003', repeat('d', 64), 'image/jpeg', 100, 10, 10);
select set_config('app.writer', '', true);
-- A once left a diary (their own, say, before joining it again): a departure is its leaver's.
insert into former_members (diary_id, user_id, diary_name) values ('aaaaaaaa-d1a2-0000-0000-000000000001', 'aaaaaaaa-0000-0000-0000-000000000001', 'left');

-- Structure: every table enabled and forced, a policy per command, safe functions and views.
select is(
    (select string_agg(relname, ', ' order by relname) from pg_class
     where relnamespace = 'public'::regnamespace and relkind = 'r' and relname not in ('schema_migrations', 'schema_definitions')
       and not (relrowsecurity and relforcerowsecurity)),
    null, 'row-level security is enabled and forced on every table');
select policies_are('public', 'users', array['users_select', 'users_insert', 'users_update', 'users_delete']);
select policies_are('public', 'diaries', array['diaries_select', 'diaries_insert', 'diaries_update', 'diaries_delete']);
select policies_are('public', 'diary_members', array['diary_members_select', 'diary_members_insert', 'diary_members_update', 'diary_members_delete']);
select policies_are('public', 'entries', array['entries_select', 'entries_insert', 'entries_update', 'entries_delete']);
select policies_are('public', 'entry_reads', array['entry_reads_select', 'entry_reads_insert', 'entry_reads_update', 'entry_reads_delete']);
select policies_are('public', 'sessions', array['sessions_select', 'sessions_insert', 'sessions_update', 'sessions_delete']);
select policies_are('public', 'refresh_tokens', array['refresh_tokens_select', 'refresh_tokens_insert', 'refresh_tokens_update', 'refresh_tokens_delete']);
select policies_are('public', 'questions', array['questions_select', 'questions_insert', 'questions_update', 'questions_delete']);
select policies_are('public', 'entry_photos', array['entry_photos_select', 'entry_photos_insert', 'entry_photos_update', 'entry_photos_delete']);
select policies_are('public', 'photo_uploads', array['photo_uploads_select', 'photo_uploads_insert', 'photo_uploads_update', 'photo_uploads_delete']);
select policies_are('public', 'profile_photos', array['profile_photos_select', 'profile_photos_insert', 'profile_photos_update', 'profile_photos_delete']);
select policies_are('public', 'former_members', array['former_members_select', 'former_members_insert', 'former_members_update', 'former_members_delete']);
select policies_are('public', 'billing_events', array['billing_events_select', 'billing_events_insert', 'billing_events_update', 'billing_events_delete']);
select is(
    (select string_agg(format('%s.%s', c.relname, p.polname), ', ') from pg_policy p join pg_class c on c.oid = p.polrelid
     where c.relnamespace = 'public'::regnamespace
       and p.polname <> c.relname || '_' || case p.polcmd when 'r' then 'select' when 'a' then 'insert' when 'w' then 'update' when 'd' then 'delete' else 'all' end),
    null, 'every policy is named <table>_<command> after the one command it covers');
select is(
    (select string_agg(format('%s.%s', c.relname, p.polname), ', ') from pg_policy p join pg_class c on c.oid = p.polrelid
     where c.relnamespace = 'public'::regnamespace and p.polcmd = 'w' and (p.polqual is null or p.polwithcheck is null)),
    null, 'every UPDATE policy has both USING and WITH CHECK');
select is(
    (select string_agg(p.oid::regprocedure::text, ', ') from pg_proc p
     where p.pronamespace = 'public'::regnamespace and p.prosecdef
       and (p.proacl is null or exists (select from aclexplode(p.proacl) a where a.grantee = 0 and a.privilege_type = 'EXECUTE'))),
    null, 'no SECURITY DEFINER function is executable by PUBLIC');
select is(
    (select string_agg(p.oid::regprocedure::text, ', ') from pg_proc p
     where p.pronamespace = 'public'::regnamespace and p.prosecdef
       and not exists (select from unnest(p.proconfig) c where c like 'search_path=%')),
    null, 'every SECURITY DEFINER function pins search_path');
select is(
    (select string_agg(relname, ', ') from pg_class
     where relnamespace = 'public'::regnamespace and relkind = 'v'
       and not coalesce(reloptions @> array['security_invoker=true'], false)),
    null, 'no view lacks security_invoker');
select is(
    (select string_agg(c.relname, ', ') from pg_class c
     where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'v') and c.relowner = 'diary_app'::regrole),
    null, 'diary_app owns nothing');
select ok(not (select rolbypassrls or rolsuper from pg_roles where rolname = 'diary_app'), 'diary_app has no BYPASSRLS');

select invite_code as b_invite_code from diaries where id = 'bbbbbbbb-d1a2-0000-0000-000000000002' \gset

-- No identity: diary_app sees nothing at all.
set local role diary_app;
select is((select count(*) from users), 0::bigint, 'no identity: 0 users');
select is((select count(*) from diaries), 0::bigint, 'no identity: 0 diaries');
select is((select count(*) from diary_members), 0::bigint, 'no identity: 0 diary_members');
select is((select count(*) from entries), 0::bigint, 'no identity: 0 entries');
select is((select count(*) from entry_reads), 0::bigint, 'no identity: 0 entry_reads');
select is((select count(*) from sessions), 0::bigint, 'no identity: 0 sessions');
select throws_ok('select count(*) from refresh_tokens', '42501', null, 'refresh_tokens are not readable at all');

-- As A: A's own rows are there, B's do not exist.
do $$ begin perform set_config('app.user_id', 'aaaaaaaa-0000-0000-0000-000000000001', true); perform refresh_app_diary_ids(); end $$;
select is((select count(*) from diaries), 1::bigint, 'A sees their own diary');
select is((select count(*) from entries where content = 'A の秘密'), 1::bigint, 'A sees their own entry');

select is((select count(*) from users where id = 'bbbbbbbb-0000-0000-0000-000000000002'), 0::bigint, 'foreign SELECT users: 0 rows');
select is((select count(*) from profile_photos), 1::bigint, 'A sees their own profile photo');
select is((select count(*) from former_members), 1::bigint, 'A sees their own departure');
select is((select count(*) from diaries where id = 'bbbbbbbb-d1a2-0000-0000-000000000002'), 0::bigint, 'foreign SELECT diaries: 0 rows');
select is((select count(*) from diary_members where diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002'), 0::bigint, 'foreign SELECT diary_members: 0 rows');
select is((select count(*) from entries where diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002'), 0::bigint, 'foreign SELECT entries: 0 rows');
select is((select count(*) from entry_reads where diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002'), 0::bigint, 'foreign SELECT entry_reads: 0 rows');
select is((select count(*) from sessions where user_id = 'bbbbbbbb-0000-0000-0000-000000000002'), 0::bigint, 'foreign SELECT sessions: 0 rows');
select is((select count(*) from member_profiles where diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002'), 0::bigint, 'foreign SELECT member_profiles: 0 rows');

select throws_ok($$insert into users (display_name) values ('mallory')$$, '42501', null, 'INSERT users: 42501 (accounts come from open_session)');
select throws_ok($$insert into diaries (name, type, created_by) values ('x', 'couple', 'bbbbbbbb-0000-0000-0000-000000000002')$$,
    '42501', null, 'foreign INSERT diaries (created_by B): 42501');
select throws_ok($$insert into diary_members (diary_id, user_id) values ('bbbbbbbb-d1a2-0000-0000-000000000002', 'aaaaaaaa-0000-0000-0000-000000000001')$$,
    '42501', null, 'foreign INSERT diary_members (A into B''s diary): 42501');
select throws_ok($$insert into entries (diary_id, user_id, content) values ('bbbbbbbb-d1a2-0000-0000-000000000002', 'aaaaaaaa-0000-0000-0000-000000000001', 'x')$$,
    '42501', null, 'foreign INSERT entries (into B''s diary): 42501');
select throws_ok($$insert into entries (diary_id, user_id, content) values ('aaaaaaaa-d1a2-0000-0000-000000000001', 'bbbbbbbb-0000-0000-0000-000000000002', 'x')$$,
    '42501', null, 'foreign INSERT entries (as B, into A''s diary): 42501');
select throws_ok($$insert into entries (diary_id, user_id, content) values ('aaaaaaaa-d1a2-0000-0000-000000000001', 'aaaaaaaa-0000-0000-0000-000000000001', 'x')$$,
    '42501', null, 'own INSERT entries, not through post_entry: 42501');
select throws_ok($$insert into entry_reads (diary_id, entry_id, user_id) values ('bbbbbbbb-d1a2-0000-0000-000000000002', 'bbbbbbbb-e000-0000-0000-000000000002', 'aaaaaaaa-0000-0000-0000-000000000001')$$,
    '42501', null, 'foreign INSERT entry_reads: 42501');
select throws_ok($$insert into sessions (user_id) values ('bbbbbbbb-0000-0000-0000-000000000002')$$, '42501', null, 'INSERT sessions: 42501');

create temporary table affected (what text, n bigint) on commit drop;
with u as (update users set display_name = 'x' where id = 'bbbbbbbb-0000-0000-0000-000000000002' returning 1) insert into affected select 'users update', count(*) from u;
with u as (update diaries set name = 'x' where id = 'bbbbbbbb-d1a2-0000-0000-000000000002' returning 1) insert into affected select 'diaries update', count(*) from u;
with u as (update diary_members set role = 'member' where diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002' returning 1) insert into affected select 'diary_members update', count(*) from u;
with u as (update entries set content = 'x' where diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002' returning 1) insert into affected select 'entries update', count(*) from u;
with u as (update entry_reads set read_at = now() where diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002' returning 1) insert into affected select 'entry_reads update', count(*) from u;
with u as (update sessions set revoked_at = now() where user_id = 'bbbbbbbb-0000-0000-0000-000000000002' returning 1) insert into affected select 'sessions update', count(*) from u;
with d as (delete from users where id = 'bbbbbbbb-0000-0000-0000-000000000002' returning 1) insert into affected select 'users delete', count(*) from d;
with d as (delete from diaries where id = 'bbbbbbbb-d1a2-0000-0000-000000000002' returning 1) insert into affected select 'diaries delete', count(*) from d;
with d as (delete from diary_members where diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002' returning 1) insert into affected select 'diary_members delete', count(*) from d;
with d as (delete from entries where diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002' returning 1) insert into affected select 'entries delete', count(*) from d;
with d as (delete from entry_reads where diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002' returning 1) insert into affected select 'entry_reads delete', count(*) from d;
select is(n, 0::bigint, 'foreign ' || what || ': 0 rows') from affected order by what;
select throws_ok($$delete from sessions where user_id = 'bbbbbbbb-0000-0000-0000-000000000002'$$, '42501', null,
    'DELETE sessions: not even granted (42501)');

-- A's own rows cannot be handed to B either.
select throws_ok($$update entries set user_id = 'bbbbbbbb-0000-0000-0000-000000000002' where id = 'aaaaaaaa-e000-0000-0000-000000000001'$$,
    '42501', null, 'UPDATE of an own entry to another author: 42501');
select throws_ok($$update entries set diary_id = 'bbbbbbbb-d1a2-0000-0000-000000000002' where id = 'aaaaaaaa-e000-0000-0000-000000000001'$$,
    '42501', null, 'UPDATE moving an own entry into a foreign diary: 42501');

-- The definer functions act only for the caller.
select throws_ok($$select join_diary((select invite_code from diaries limit 1), 'bbbbbbbb-0000-0000-0000-000000000002')$$,
    '42501', null, 'join_diary for someone else: 42501');
select throws_ok($$select mark_as_read('bbbbbbbb-e000-0000-0000-000000000002', 'aaaaaaaa-0000-0000-0000-000000000001')$$,
    'ZN003', null, 'mark_as_read of a foreign entry: ZN003');
select throws_ok($$select mark_as_read('bbbbbbbb-d1a2-0000-0000-000000000002', 'bbbbbbbb-e000-0000-0000-000000000002', 'aaaaaaaa-0000-0000-0000-000000000001')$$,
    'ZN003', null, 'mark_as_read in a foreign diary: ZN003');
select throws_ok($$select mark_as_read('aaaaaaaa-d1a2-0000-0000-000000000001', 'aaaaaaaa-e000-0000-0000-000000000001', 'bbbbbbbb-0000-0000-0000-000000000002')$$,
    'ZN003', null, 'mark_as_read for someone else: ZN003');
select is(remove_diary_member('bbbbbbbb-d1a2-0000-0000-000000000002', 'bbbbbbbb-0000-0000-0000-000000000002'), 'not_found',
    'remove_diary_member in a foreign diary: not_found');
select throws_ok($$select authenticate('bbbbbbbb-5e55-0000-0000-000000000002', 'aaaaaaaa-0000-0000-0000-000000000001')$$,
    'ZN401', null, 'authenticate with another user''s session: ZN401');

-- Whom the caller sees (users_select) follows memberships changed in the same transaction
-- (0005 keeps the answer per transaction and refreshes it on every change).
select is((select count(*) from users where id = 'bbbbbbbb-0000-0000-0000-000000000002'), 0::bigint,
    'before joining: B''s user row does not exist for A');
select is(join_diary(:'b_invite_code', 'aaaaaaaa-0000-0000-0000-000000000001'), 'bbbbbbbb-d1a2-0000-0000-000000000002'::uuid,
    'A joins B''s couple diary');
select is((select count(*) from users where id = 'bbbbbbbb-0000-0000-0000-000000000002'), 1::bigint,
    'after joining, in the same transaction: A sees B''s user row');
select authenticate('bbbbbbbb-5e55-0000-0000-000000000002', 'bbbbbbbb-0000-0000-0000-000000000002');
select is(remove_diary_member('bbbbbbbb-d1a2-0000-0000-000000000002', 'aaaaaaaa-0000-0000-0000-000000000001'), 'removed',
    'B, the owner, removes A');
select is((select count(*) from users where id = 'aaaaaaaa-0000-0000-0000-000000000001'), 0::bigint,
    'after removing A, in the same transaction: B no longer sees A''s user row');
select throws_ok($$update diaries set type = 'family' where id = 'bbbbbbbb-d1a2-0000-0000-000000000002'$$,
    '23514', null, 'a diary''s type cannot change, not even by its owner');

-- Devices are their owner's alone; the outbox is the servers', through definer functions only.
select is((select string_agg(token, ',') from devices), repeat('b', 64), 'devices: B sees their own device only');
delete from devices where token = repeat('a', 64);
reset role;
select is((select count(*) from devices where token = repeat('a', 64)), 1::bigint, 'DELETE of another user''s device removes nothing');
set local role diary_app;
select throws_ok($$insert into devices (token, user_id, environment) values (repeat('c', 64), 'bbbbbbbb-0000-0000-0000-000000000002', 'sandbox')$$,
    '42501', null, 'INSERT devices: 42501 (register_device moves tokens)');
select throws_ok('select count(*) from push_outbox', '42501', null, 'push_outbox is not readable at all');

-- Photos: an entry's are its diary's members'; an upload is its uploader's; changes go
-- through set_entry_photos, which acts on the caller's own entries only.
select is((select count(*) from entry_photos), 0::bigint, 'entry_photos: B sees no photo of A''s diary');
select is((select string_agg(id::text, ',') from photo_uploads), 'bbbbbbbb-9000-0000-0000-000000000002', 'photo_uploads: B sees their own upload only');
select is((select count(*) from profile_photos), 0::bigint, 'profile_photos: B sees no photo of A, with whom B shares no diary');
select throws_ok($$insert into profile_photos (user_id, id, content_hash, content_type, bytes, width, height) values
    ('bbbbbbbb-0000-0000-0000-000000000002', gen_random_uuid(), repeat('e', 64), 'image/png', 1, 1, 1)$$, '42501', null,
    'INSERT profile_photos: 42501 (set_profile_photo writes them)');
select is((select count(*) from former_members), 0::bigint, 'former_members: B sees no departure of A''s');
select throws_ok($$insert into former_members (diary_id, user_id, diary_name) values ('aaaaaaaa-d1a2-0000-0000-000000000001', 'bbbbbbbb-0000-0000-0000-000000000002', 'forged')$$,
    '42501', null, 'INSERT former_members: 42501 (drop_diary_member records departures; a forged one would open the diary''s restore)');
select lives_ok($$select set_entry_photos('aaaaaaaa-d1a2-0000-0000-000000000001', 'aaaaaaaa-e000-0000-0000-000000000001', '{}')$$,
    'set_entry_photos on A''s entry, as B: nothing happens');
reset role;
select is((select count(*) from entry_photos), 1::bigint, 'A''s photo is still on A''s entry');
set local role diary_app;
select throws_ok($$select set_entry_photos('bbbbbbbb-d1a2-0000-0000-000000000002', 'bbbbbbbb-e000-0000-0000-000000000002', '{aaaaaaaa-9000-0000-0000-000000000002}')$$,
    'ZN004', null, 'attaching A''s upload to B''s entry: ZN004, as for a photo that does not exist');
select throws_ok('select count(*) from photo_garbage', '42501', null, 'photo_garbage is not readable at all');
select throws_ok('select count(*) from billing_events', '42501', null, 'billing_events is not readable at all: the webhook writes it through record_billing_event');
select throws_ok('select count(*) from apple_tokens', '42501', null, 'apple_tokens is not readable at all: sign-in writes it through store_apple_token');
select throws_ok('select count(*) from apple_revocations', '42501', null, 'apple_revocations is not readable at all: the revoker leases rows through claim_apple_revocations');
select throws_ok('select count(*) from apple_notifications', '42501', null, 'apple_notifications is not readable at all');

reset role;
select * from finish();
rollback;
