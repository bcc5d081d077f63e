-- Benchmarks/growth.sh's data set: three family diaries whose histories differ in length
-- only, 100, 10,000 and 100,000 entries (size s = 1, 2, 3). Ids derive from text
-- (md5(text)::uuid), so Benchmarks/growth/data.py names the same rows:
--   user     md5('g-u-<s>-<role>')   role m: the measuring user, the diary's owner
--                                         p: the partner, who writes 9 entries in 10
--                                         j1..j8: joiners, in no diary (join+leave)
--   session  md5('g-s-<s>-<role>')
--   diary    md5('g-d-<s>'), invite code 'G' followed by s in 9 digits
--   entry    md5('g-e-<s>-<k>'), k = 1..n, one minute apart, entry n the newest;
--            written by m when k % 10 = 0, else by p
-- p has read every entry of m; m has read a quarter of p's (k % 4 = 1) and p's newest 20,
-- so m has about 0.65 n entries unread. Two members leave eight seats for the joiners.
--
-- Accounts, diaries, members, entries and receipts go through the functions that make
-- them (add_user, create_diary_as, add_diary_member, post_entry_as, mark_as_read_as), so
-- that the counters and the log follow. Entries and their receipts go in 1,000 at a time, one transaction each (\gexec runs each
-- generated string as a statement of its own, at top level), so that the counter rows'
-- old versions are pruned as the seeding goes instead of piling up in one transaction.
-- Run as a role that bypasses RLS (the owner), after the migrations, with psql.
\set ON_ERROR_STOP 1
begin;
select count(add_user(md5('g-u-' || s || '-' || role)::uuid, 'growth ' || s || ' ' || role))
from generate_series(1, 3) as s, unnest(array['m', 'p', 'j1', 'j2', 'j3', 'j4', 'j5', 'j6', 'j7', 'j8']) as role;
insert into sessions (id, user_id)
select md5('g-s-' || s || '-' || role)::uuid, md5('g-u-' || s || '-' || role)::uuid
from generate_series(1, 3) as s, unnest(array['m', 'p', 'j1', 'j2', 'j3', 'j4', 'j5', 'j6', 'j7', 'j8']) as role;

select count(create_diary_as(md5('g-u-' || s || '-m')::uuid, md5('g-d-' || s)::uuid, 'growth ' || n, 'family',
       'G' || lpad(s::text, 9, '0'), now() - interval '1 year'))
from (values (1, 100), (2, 10000), (3, 100000)) as sizes (s, n);
select count(add_diary_member(md5('g-d-' || s)::uuid, md5('g-u-' || s || '-p')::uuid, 'member', now() - interval '1 year' + interval '1 day'))
from generate_series(1, 3) as s;
commit;

-- Entry k's time, for every batch alike.
select extract(epoch from now()) as seeded_at \gset
select format($batch$
    select count(*) as posted from (
        select post_entry_as(md5('g-u-' || s || '-' || case when k %% 10 = 0 then 'm' else 'p' end)::uuid, md5('g-d-' || s)::uuid,
               md5('g-e-' || s || '-' || k)::uuid, '今日の日記 ' || k || repeat('。', 40),
               created_at => to_timestamp(%1$s) - make_interval(mins => n - k + 1))
        from (values (1, 100), (2, 10000), (3, 100000)) as sizes (s, n), generate_series(%2$s, least(n, %3$s)) as k
    ) posts;
    select count(*) as read from (
        select mark_as_read_as(md5('g-u-' || s || '-' || case when k %% 10 = 0 then 'p' else 'm' end)::uuid, md5('g-d-' || s)::uuid,
               md5('g-e-' || s || '-' || k)::uuid, to_timestamp(%1$s) - make_interval(mins => n - k + 1) + interval '30 seconds')
        from (values (1, 100), (2, 10000), (3, 100000)) as sizes (s, n), generate_series(%2$s, least(n, %3$s)) as k
        where k %% 10 = 0 or k %% 4 = 1 or k > n - 20
    ) reads
    $batch$, :'seeded_at', first, first + 999)
from generate_series(1, 100000, 1000) as first
\gexec
