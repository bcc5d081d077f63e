\set k random(1, 50000)
\set u ((:k - 1) % 1000) * 10 + (:k % 10) + 1
select mark_as_read(md5('e' || :k)::uuid, md5(:u::text)::uuid);
