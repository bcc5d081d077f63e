-- Each table's reason, where sql/schema.sql shows it: the migrations that made them explain
-- them, but applied migrations are never edited and the schema file keeps no SQL comments.
comment on table users is
    'A person. Signed in with Apple (apple_sub) or, in development, by dev_name; premium_* from RevenueCat; settings drive the reminder (reminder_schedule).';
comment on table diaries is
    'The tenant: every diary table keys by diary_id. The type caps its members (couple 2, family 10, friends 10, anonymous 2); entry_count is kept by the writes, not counted (check-counters).';
comment on table diary_members is
    'Who belongs to a diary, with role and unread_count (kept by the writes). join_diary adds a member under the diary''s row lock, so the cap holds with no race. An anonymous diary shows alias_id instead of the user.';
comment on table entries is
    'The diary''s entries. The client may choose the id (diary_id, id), so a retried post is recognised; the timeline index serves the newest first.';
comment on table entry_reads is
    'Read receipts (既読): one row per reader and entry, written by mark_as_read; the first read lowers the reader''s unread_count and is logged.';
comment on table entry_photos is
    'Photos attached to an entry, in order, by set_entry_photos; bytes live in the photo store under content_hash, shared by identical photos.';
comment on table photo_uploads is
    'Uploads not yet attached to an entry; attaching moves them to entry_photos. Unattached ones go after 24 hours.';
comment on table photo_upload_days is
    'Uploads per user and UTC day, for the daily limit: one row a day, whatever the history.';
comment on table photo_garbage is
    'Hashes whose rows were deleted, waiting for their files to be removed from the photo store; a hash named again is taken back under its advisory lock.';
comment on table invite_codes is
    'Every invite code drawn, keyed by the code, so that codes are unique across the service (and shardable: a table sharded by diary can only keep unique what holds diary_id). diaries.invite_code is the current one.';
comment on table change_log is
    'What changed in each diary, in commit order, for realtime frames and delta sync; pruned by age (change_log_horizon).';
comment on table change_log_horizon is
    'The oldest position still in the change log: a cursor older than it answers resync_required.';
comment on table sessions is
    'A signed-in device''s session; authenticate() checks it on every request, and revoking it ends the session''s access and sockets.';
comment on table refresh_tokens is
    'Refresh tokens, stored only as SHA-256 hashes. A token is used once: exchanging it sets rotated_at and issues its successor; reusing a rotated one revokes the session.';
comment on table devices is
    'A person''s devices for push notifications, keyed by APNs token; the oldest is replaced at the 21st.';
comment on table push_outbox is
    'Notifications to send, queued in the transaction that causes them, so none is lost to a crash; claimed with a lease, retried with backoff, marked dead after 24 hours of failure. Keyed by user and device: a reminder concerns no diary.';
comment on table reminder_schedule is
    'One row per user whose daily reminder is on; next_at null is scheduled by the next tick, which knows the time.';
comment on table billing_events is
    'RevenueCat''s webhook events, applied once each (event_id), kept as the purchases'' audit trail; an event for a user not yet known waits 7 days for them to sign in.';
comment on table export_days is
    'Exports a user started, per UTC day (diary and personal exports together), for the daily limit.';
comment on table backup_runs is
    'One row per backup diary-server backup finished, with what it recorded from its snapshot; verify-backup fills in the verification. Read by GET /v1/data-safety.';
comment on table service_notices is
    'Notices for the apps (GET /v1/service-status). A shutdown is announced at least 183 days before it takes effect, held by a check constraint.';
comment on table questions is
    'The bank of daily questions offered to write about; an entry keeps the question''s text as it was.';
comment on table apple_tokens is
    'An account''s Apple refresh token, sealed by the server (AES-GCM under DIARY_SECRETS_KEY_FILE, bound to token_id): kept only to revoke it when the account is deleted.';
comment on table apple_revocations is
    'Revocations owed to Apple, queued by the transaction that deletes the account, so neither a crash nor Apple being down loses one; tried with backoff for 7 days, then recorded as failed.';
comment on table apple_notifications is
    'Apple''s server-to-server notifications already handled, by the token''s jti: a repeat is answered without being applied again.';
