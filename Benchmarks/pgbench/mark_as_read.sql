\set k random(1, 50000)
\set u ((:k - 1) % 1000) * 10 + (:k % 10) + 1
\set d (:k - 1) % 1000 + 1
select mark_as_read_as(md5(:u::text)::uuid, md5('d' || :d)::uuid, md5('e' || :k)::uuid);
