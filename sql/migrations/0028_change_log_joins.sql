-- A member's latest join to a diary, found from the diary's own shard. A realtime socket
-- woken for a diary its cursor does not name (one joined since) reads it from there, in the
-- one statement that also reads the diary's changes and what they show
-- (ChangeLogRepository.changesStatement); the same statement never starts before the
-- caller's latest join, so a cursor kept across a departure and a return does not show what
-- happened meanwhile. user_diaries.position_at_join says the same, but lives on the
-- coordinator on Citus, apart from the diary's shard. Only adds: the release still serving
-- never reads it.
create index change_log_joins on change_log (diary_id, user_id, position) where kind = 'member.joined';
