-- A session's end is announced by what ends it (announce_session_end(session), in
-- sql/definitions/50_realtime.sql), not by a trigger on sessions: a trigger with effects beyond
-- its row is one Citus cannot run. Drops the triggers and their function, which no release
-- served.
drop trigger if exists sessions_end_announced on public.sessions;
drop trigger if exists sessions_deletion_announced on public.sessions;
drop function if exists public.announce_session_end();
