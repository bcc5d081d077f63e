-- Definitions: the overloads kept only for the release still serving (released-signatures.txt),
-- which calls them; this release calls their successors. The next release's contract migration
-- drops them and empties this file (sql/definitions/README.md). Applied by `migrate` like every
-- definition file.

-- Functions

CREATE OR REPLACE FUNCTION public.edit_entry(diary uuid, entry uuid, content text, question text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return edit_entry(diary, entry, content, question, false);
end
$$;

COMMENT ON FUNCTION public.edit_entry(diary uuid, entry uuid, content text, question text) IS 'The release before clear_question''s: edit_entry with the question never cleared.';

REVOKE ALL ON FUNCTION public.edit_entry(diary uuid, entry uuid, content text, question text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.edit_entry(diary uuid, entry uuid, content text, question text) TO diary_app;

CREATE OR REPLACE FUNCTION public.mark_as_read(entry_id uuid, user_id uuid) RETURNS timestamp with time zone
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return mark_as_read((select e.diary_id from entries e where e.id = mark_as_read.entry_id), mark_as_read.entry_id, mark_as_read.user_id);
end
$$;

COMMENT ON FUNCTION public.mark_as_read(entry_id uuid, user_id uuid) IS 'mark_as_read without the diary, found from the entry, for servers of the previous release during a rolling deploy.';

REVOKE ALL ON FUNCTION public.mark_as_read(entry_id uuid, user_id uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION public.mark_as_read(entry_id uuid, user_id uuid) TO diary_app;

CREATE OR REPLACE FUNCTION public.register_device(device_token text, device_environment text) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    perform register_device(device_token, device_environment, nullif(current_setting('app.session_id', true), '')::uuid);
end
$$;

COMMENT ON FUNCTION public.register_device(device_token text, device_environment text) IS 'The release before sessions'' devices: register_device bound to the session authenticate() recorded for the transaction (unbound without one). Registers the caller''s device for push: a token registered by someone else moves to the caller with its unsent notifications dropped, and at most 20 devices are kept (the one registered longest ago goes). The user''s row is locked, so the cap holds under concurrency.';

REVOKE ALL ON FUNCTION public.register_device(device_token text, device_environment text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.register_device(device_token text, device_environment text) TO diary_app;

CREATE OR REPLACE FUNCTION public.claim_photo_garbage(max_hashes integer) RETURNS TABLE(content_hash text, unnamed boolean)
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
begin
    return query select * from claim_photo_garbage(max_hashes, interval '0');
end
$$;

COMMENT ON FUNCTION public.claim_photo_garbage(max_hashes integer) IS 'Takes up to max_hashes queued hashes, locked against other collectors (SKIP LOCKED) and against uploads of the same bytes (photo_hash_lock), each with whether a row still names it; the photo sweeper removes the unnamed ones'' files before it commits. Also forgets upload counts older than two days.';

REVOKE ALL ON FUNCTION public.claim_photo_garbage(max_hashes integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.claim_photo_garbage(max_hashes integer) TO diary_app;

CREATE OR REPLACE FUNCTION public.record_photo_upload(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public'
    AS $$
    select record_photo_upload(photo_id, hash, media_type, byte_count, pixel_width, pixel_height, daily_limit, null::bigint)
$$;

COMMENT ON FUNCTION public.record_photo_upload(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer) IS 'The signature without a checksum, for servers of the previous release while a deploy rolls: records the upload as the eight-argument form does, with no CRC-32.';

REVOKE ALL ON FUNCTION public.record_photo_upload(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.record_photo_upload(photo_id uuid, hash text, media_type text, byte_count integer, pixel_width integer, pixel_height integer, daily_limit integer) TO diary_app;
