-- The endpoint benchmark's data set: 10,000 users, 4,000 diaries of mixed types,
-- 200,000 entries, 200,000 read receipts, a live session per user. Ids derive from
-- numbers (md5(n)::uuid), so the pgbench scripts, the wrk script and this file name
-- the same rows. Run as a role that bypasses RLS (the owner), after the migrations.
--
-- User n's home diary h(n), which the scripts compute the same way:
--   n in 1..5000      family  (10 members)   h = (n - 1) / 10 + 1        diaries 1..500
--   n in 5001..9000   friends (8 of 10)      h = 501 + (n - 5001) / 8    diaries 501..1000
--   n in 9001..10000  couple  (2 of 2)       h = 1001 + (n - 9001) / 2   diaries 1001..1500
-- Diaries 1501..4000 are couple and anonymous diaries whose partner has not joined yet,
-- owned by user 4 * (d - 1500). Diary d's invite code is 'B' followed by d in 9 digits.
-- Entry k (1..200,000) is in diary (k - 1) % 1500 + 1; diary d holds entries d + 1500 i.
begin;
create temporary table home (n int primary key, d int, slot int, size int);
insert into home
select n,
       case when n <= 5000 then (n - 1) / 10 + 1 when n <= 9000 then 501 + (n - 5001) / 8 else 1001 + (n - 9001) / 2 end,
       case when n <= 5000 then (n - 1) % 10 when n <= 9000 then (n - 5001) % 8 else (n - 9001) % 2 end,
       case when n <= 5000 then 10 when n <= 9000 then 8 else 2 end
from generate_series(1, 10000) n;

-- Through add_user, create_diary_as and add_diary_member, as every account, diary and
-- member is made, so that their reminders, invite codes, counters and log follow.
select count(add_user(md5(n::text)::uuid, 'user ' || n)) from generate_series(1, 10000) n;

select count(create_diary_as(
       md5((case when d <= 1500 then (select min(n) from home where home.d = g.d) else 4 * (d - 1500) end)::text)::uuid,
       md5('d' || d)::uuid, 'diary ' || d,
       case when d <= 500 then 'family' when d <= 1000 then 'friends' when d <= 1500 or d % 2 = 0 then 'couple' else 'anonymous' end,
       'B' || lpad(d::text, 9, '0'),
       case when d <= 1500 then now() - interval '400 days' end))
from generate_series(1, 4000) as g(d);

select count(add_diary_member(md5('d' || d)::uuid, md5(n::text)::uuid, 'member', now() - interval '400 days' + slot * interval '1 day'))
from (select * from home where slot > 0 order by d, slot) joining;

commit;

-- Each entry is written by one member of its diary and read by the next one, through
-- post_entry_as and mark_as_read_as, as every entry and read is, 1,000 to a transaction
-- (\gexec runs each batch on its own): in one transaction, each post would walk every
-- version that the posts before it left of its diary's row.
\o /dev/null
select format($batch$
    select post_entry_as(md5(author.n::text)::uuid, md5('d' || e.d)::uuid, md5('e' || e.k)::uuid,
           '今日の日記 ' || e.k || repeat('。', 40), created_at => now() - make_interval(secs => 200000 - e.k))
    from (select k, (k - 1) %% 1500 + 1 as d from generate_series(%s, %s) k) e
    join home author on author.d = e.d and author.slot = e.k %% (case when e.d <= 500 then 10 when e.d <= 1000 then 8 else 2 end)
    ;
    select mark_as_read_as(md5(reader.n::text)::uuid, md5('d' || e.d)::uuid, md5('e' || e.k)::uuid, now() - make_interval(secs => 199000 - e.k))
    from (select k, (k - 1) %% 1500 + 1 as d from generate_series(%s, %s) k) e
    join home reader on reader.d = e.d and reader.slot = (e.k + 1) %% (case when e.d <= 500 then 10 when e.d <= 1000 then 8 else 2 end)
$batch$, first, first + 999, first, first + 999) from generate_series(1, 200000, 1000) first
\gexec
\o

begin;

insert into sessions (id, user_id) select md5('s' || n)::uuid, md5(n::text)::uuid from generate_series(1, 10000) n;
commit;
-- Vacuumed too: every post and first read updated its members' rows.
vacuum (analyze) users, diaries, diary_members, entries, entry_reads, sessions;
