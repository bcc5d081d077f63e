\set n random(1, 10000)
select id, display_name, time_zone from users where id = md5(:n::text)::uuid;
