-- Benchmark data with ids derived from numbers (md5(n)::uuid), so pgbench scripts
-- and the Swift client can address the same rows with the same SQL.
-- 10,000 users in 1,000 family diaries of 10; 50,000 entries.
begin;
-- Through add_user, create_diary_as and add_diary_member, as every account, diary and
-- member is made.
select count(add_user(md5(g::text)::uuid, 'user ' || g)) from generate_series(1, 10000) g;

select count(create_diary_as(md5(((d - 1) * 10 + 1)::text)::uuid, md5('d' || d)::uuid, 'diary ' || d, 'family'))
from generate_series(1, 1000) d;

select count(add_diary_member(md5('d' || d)::uuid, md5(((d - 1) * 10 + m)::text)::uuid, 'member'))
from generate_series(1, 1000) d, generate_series(2, 10) m;

-- Entry k lives in diary ((k-1) % 1000) + 1 and is written by that diary's member (k % 10) + 1.
-- Posted through post_entry_as, as every entry is, so that the counters and the log follow.
select count(*) as posted from (
    select post_entry_as(md5((((k - 1) % 1000) * 10 + (k % 10) + 1)::text)::uuid, md5('d' || (((k - 1) % 1000) + 1))::uuid,
           md5('e' || k)::uuid, 'entry ' || k, created_at => now() - make_interval(secs => 50000 - k))
    from generate_series(1, 50000) k
) posts;
commit;
analyze;
