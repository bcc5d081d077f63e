-- Benchmark data with ids derived from numbers (md5(n)::uuid), so pgbench scripts
-- and the Swift client can address the same rows with the same SQL.
-- 10,000 users in 1,000 family diaries of 10; 50,000 entries.
begin;
insert into users (id, display_name)
select md5(g::text)::uuid, 'user ' || g from generate_series(1, 10000) g;

insert into diaries (id, name, type, created_by)
select md5('d' || d)::uuid, 'diary ' || d, 'family', md5(((d - 1) * 10 + 1)::text)::uuid
from generate_series(1, 1000) d;
insert into invite_codes (code, diary_id) select invite_code, id from diaries;

insert into diary_members (diary_id, user_id, role)
select md5('d' || d)::uuid, md5(((d - 1) * 10 + m)::text)::uuid, case when m = 1 then 'owner' else 'member' end
from generate_series(1, 1000) d, generate_series(1, 10) m;

-- Entry k lives in diary ((k-1) % 1000) + 1 and is written by that diary's member (k % 10) + 1.
-- Posted through post_entry_as, as every entry is, so that the counters and the log follow.
select count(*) as posted from (
    select post_entry_as(md5((((k - 1) % 1000) * 10 + (k % 10) + 1)::text)::uuid, md5('d' || (((k - 1) % 1000) + 1))::uuid,
           md5('e' || k)::uuid, 'entry ' || k, created_at => now() - make_interval(secs => 50000 - k))
    from generate_series(1, 50000) k
) posts;
commit;
analyze;
