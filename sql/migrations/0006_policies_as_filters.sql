-- Three select policies keep their meaning and change their spelling, so that PostgreSQL
-- 15 checks them as a filter on the row it has already found instead of as a second
-- index key.
--
-- Why: `users.id = any (…)` next to `users.id = m.user_id` made both index keys of one
-- column. PostgreSQL 15 then sorts the array and tries each element in turn, on every
-- rescan: ten times per member_profiles row (users), once per member (diaries) and once
-- per timeline entry (entry_reads). Counted with callgrind on one backend (the timeline
-- request of Benchmarks/endpoints/timeline.sql, 200 transactions, output excluded):
--   RLS off 2.39 M instructions per request, RLS as in 0004 2.73 M (+14.5%), with this
--   migration 2.65 M (+11.0%).
--
-- `(p) is true` lets the same rows through as `p` in a policy (false and null both hide
-- the row), but it is not an index key. The plans stay the same otherwise; GET
-- /v1/diaries even gains entry_id as an index key of its unread-count anti-join.
--
-- Not respelt: entries_select and diary_members_select. There the key is the only
-- selective one the planner estimates with: as a filter, its default selectivity made
-- the timeline sort the whole diary instead of walking entries_timeline (measured 45%
-- slower in Benchmarks/rls-overhead.sh).

alter policy users_select on users
    using ((id = any ((select app_visible_user_ids())::uuid[])) is true);

alter policy diaries_select on diaries
    using ((id = any ((select app_diary_ids())::uuid[])) is true);

alter policy entry_reads_select on entry_reads
    using ((diary_id = any ((select app_diary_ids())::uuid[])) is true);
