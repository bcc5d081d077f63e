-- Each function's reason, where sql/schema.sql shows it: the migrations that made them explain
-- them, but applied migrations are never edited and the schema file keeps no SQL comments.

-- Diaries, members and entries.
comment on function set_updated_at() is
    'Trigger: sets updated_at to now() when an update changes the row. An update that changes nothing leaves it alone, so updated_at says when the row last changed, not when it was last written.';
comment on function generate_invite_code() is
    'Draws an invite code: 50 bits from pgcrypto''s CSPRNG, written as ten characters of Crockford base32 (no I, L, O or U), so that codes cannot be guessed. The default of diaries.invite_code, and what replacing a diary''s code sets.';
comment on function normalize_invite_code(text) is
    'An invite code as a person types it, made comparable: upper case, without hyphens or spaces, and with the letters Crockford base32 reads as digits (O as 0, I and L as 1) replaced.';
comment on function diary_member_cap(text) is
    'The most members a diary of this type may have: couple and anonymous 2, family and friends 10. join_diary checks it under the diary''s row lock.';
comment on function check_diary_has_one_owner() is
    'Constraint trigger, deferred to commit: a diary that still exists has exactly one owner, so a transaction may hand ownership over in two steps. SECURITY DEFINER, so that it counts every member whoever the caller is.';
comment on function join_diary(text, uuid) is
    'Joins the caller (user_id must be app_user_id()) to the diary an invite code names, without exceeding its cap however many join at once: the diary row is locked before the members are counted (ZN001 an invalid code, ZN002 a full diary). Runs as the owner because a joiner cannot see the diary yet; joining again returns the diary and refreshes the caller''s visible diaries.';
comment on function mark_as_read(uuid, uuid) is
    'Records that user_id has read entry_id (既読), refusing anyone outside the entry''s diary (ZN003). The entry is locked while its receipt is written, so a read racing the entry''s deletion answers not found instead of failing the foreign key.';

-- Sessions, identity and the policies' helpers.
comment on function rotate_refresh_token(bytea, bytea, interval) is
    'Exchanges a refresh token (both passed as hashes) for its successor, which the server derives from the presented token so that a retry derives the same one: rotated, replayed (a retry within 10 s), reuse_detected (a used token came back: the session is revoked), revoked or unknown. Never raises for a bad token, so that a revocation commits; on success the session''s user becomes the transaction''s caller.';
comment on function app_user_id() is
    'The caller, as set for this transaction by authenticate() (app.user_id); null when unset. Every policy reads it, so it is plain SQL with no SET clause that names everything by schema, which lets PostgreSQL inline it.';
comment on function authenticate(uuid, uuid) is
    'Sets the caller''s identity for the current transaction only, after checking that the session is live and belongs to that user (ZN401 otherwise), then loads their diaries and visible users. The server calls it at the start of every authenticated request.';
comment on function is_diary_member(uuid) is
    'Whether the caller is a member of the diary. SECURITY DEFINER, because it reads diary_members beneath that table''s own policy.';
comment on function is_diary_owner(uuid) is
    'Whether the caller owns the diary, for the policies that let only the owner change or delete a diary or remove another member. SECURITY DEFINER, because it reads diary_members beneath that table''s own policy.';
comment on function app_diary_ids() is
    'The caller''s diaries (app.diary_ids), as an array a policy compares against once per statement; refresh_app_diary_ids() fills it, so a policy costs no query. Inlinable, like app_user_id().';
comment on function refresh_app_diary_ids() is
    'Computes the caller''s diaries and the users they may see (app.diary_ids, app.visible_user_ids) for this transaction, when the identity is set and whenever a membership changes. SECURITY DEFINER, because it reads diary_members beneath its policy; it only ever answers for the caller.';
comment on function refresh_app_diary_ids_after_membership_change() is
    'Trigger: after a membership row is inserted or deleted, refreshes the caller''s diaries and visible users, since any membership change in their transaction (a join, a leave, an owner removing someone) may change what they see.';
comment on function app_visible_user_ids() is
    'The users whose row the caller may see (users_select): themself and the members of their diaries that are not anonymous, so anonymous co-members stay hidden even from a query that forgets member_profiles'' aliases. Read from app.visible_user_ids, which refresh_app_diary_ids() sets, and inlinable.';
comment on function set_app_setting(text, text) is
    'Sets an app.* setting for the current transaction so that it reaches every node: on Citus by SET LOCAL with citus.propagate_set_commands = local, because the workers'' policies read it, and on a single PostgreSQL by set_config. The caller''s identity and diaries are set through it.';
comment on function open_session(text, text, text, text, uuid, bytea, interval) is
    'Signs in: finds or creates the account by Apple subject or dev name, opens a session with its first refresh token, and makes the account the transaction''s caller. SQL cannot verify the Apple token or allow dev sign-in, so the server does, and only diary_app may call this.';

-- Leaving, deleting and creating.
comment on function remove_diary_member(uuid, uuid) is
    'Removes target (a member''s public id: their user id, or their alias in an anonymous diary) from the diary for the caller, and returns removed, not_found (no such member the caller can see) or forbidden (a member removing someone else). Everything is read under the diary''s row lock, and a removed owner''s role passes to the longest-standing member, or the diary is deleted when nobody is left.';
comment on function delete_my_account() is
    'Deletes the caller''s account with their entries, reads, memberships and sessions; diaries they owned pass to the longest-standing remaining member or, left empty, are deleted. Every diary of the caller is locked first, in one order, so that it cannot deadlock with concurrent posts; DELETE /v1/me and Apple''s account-delete notification call it.';
comment on function create_diary(uuid, text, text, integer) is
    'Creates a diary with the caller as its owner, which the caller could not insert as themself (the diary is invisible to them until the membership exists), and claims its invite code. A free user owns at most free_limit diaries (ZN006), counted under the caller''s row lock.';
comment on function forbid_diary_type_change() is
    'Trigger: refuses any change of a diary''s type (diaries_type_fixed), since the type sets the member cap and an anonymous diary turned into another type would unmask its members.';

-- Counters kept by the writes.
comment on function forbid_key_change() is
    'Trigger: an entry or a read receipt never moves to another diary, author or reader, because the counters account for each under its keys. It runs after the row is checked, so that the row-level policies refuse such moves first (42501).';
comment on function count_posted_entries() is
    'Statement trigger on new entries: adds them to diaries.entry_count and to every other member''s unread_count, once per counter row per statement. Keeps the unread counts exact without counting the diary''s history.';
comment on function count_deleted_entries() is
    'Statement trigger on deleted entries: lowers entry_count and the unread_count of every other member who had not read them, then deletes their receipts in one statement (the foreign key does not cascade, which would delete them one entry at a time).';
comment on function count_first_reads() is
    'Statement trigger on new read receipts, which are first reads only (a second read updates read_at): lowers each reader''s unread_count, except for their own entries.';
comment on function count_unread_for_new_member() is
    'Trigger: a new member''s unread_count is the diary''s entry_count less their own entries and their receipts on others'' (one who comes back finds theirs again). The diary row is share-locked, so a concurrent post is either in entry_count or counts the newcomer.';

-- The change log.
comment on function log_entry_changes() is
    'Statement trigger: logs posted (entry.created) and deleted (entry.deleted) entries in change_log and notifies diary_changes. Entries that go with their diary are not logged one by one: nobody is left to tell.';
comment on function log_edited_entry() is
    'Trigger: logs entry.updated when an entry''s content, question or images change, the changes its readers can see, and notifies diary_changes.';
comment on function log_first_reads() is
    'Statement trigger: logs each first read (entry.read) with the reader''s alias and notifies diary_changes; a second read inserts no receipt and logs nothing.';
comment on function log_membership_changes() is
    'Statement trigger: logs member.joined and member.left with the member''s alias, which is kept because a departed member''s row and alias are gone, and notifies diary_changes.';
comment on function log_renamed_diary() is
    'Trigger: logs diary.updated when a diary''s name changes; other updates of the row, such as entry_count on every post, are not logged.';
comment on function change_log_tail(xid8, bigint, integer) is
    'The servers'' tail of the change log after a position: each change with the users it may concern (the diary''s members and the one who left), for waking their sockets, and no content. Only changes older than the snapshot''s xmin are read, so none can later appear below the line; the last row carries that xmin even when no change is returned.';
comment on function live_sessions(uuid[]) is
    'Of these sessions, those still live (not revoked or deleted): realtime sockets close when their session is no longer among them.';
comment on function prune_change_log(interval, integer) is
    'Removes up to max_rows changes older than older_than, never younger than 30 days, unless another server is pruning, and returns how many. The highest position removed goes to change_log_horizon, so that an older cursor is answered with a resync.';

-- Push notifications and reminders.
comment on function register_device(text, text) is
    'Registers the caller''s device for push: a token registered by someone else moves to the caller with its unsent notifications dropped, and at most 20 devices are kept (the one registered longest ago goes). The user''s row is locked, so the cap holds under concurrency.';
comment on function push_author_name(uuid, uuid) is
    'An author''s name as a notification shows it: in an anonymous diary the alias label (匿名N, numbered as member_profiles numbers them), never the name. Null when the author is not a member.';
comment on function queue_entry_notifications() is
    'Statement trigger on new entries: queues a push_outbox row for each device of every other member who wants new-entry notifications, in the posting transaction, so that a rolled-back entry sends nothing and a crash loses nothing. Notifies push_outbox.';
comment on function claim_push_batch(integer, interval) is
    'Claims up to max_rows due notifications (SKIP LOCKED) and leases them for lease, so that no transaction stays open while APNs is called. Rows that must not be sent any more (the entry deleted, the receiver gone from the diary, the device moved) are deleted instead of returned.';
comment on function finish_push_batch(bigint[], text[], integer[], text[]) is
    'Settles claimed notifications in one round trip: sent (deleted), retry (due again after delay_ms, dead once 24 hours old), hold (due again, never dead: the configuration is at fault), dead (Apple refused the notification itself), unregistered (the device and every row for it removed).';
comment on function push_outbox_counts() is
    'Pending and dead notifications, for the gauges; also deletes dead rows older than 30 days.';
comment on function reminder_instant(text, time, date) is
    'The instant of local time at_time on day in zone; a time the zone skips that day (a daylight-saving jump) gives the first valid minute after it. Null for a zone PostgreSQL does not know.';
comment on function schedule_reminder() is
    'Trigger on users: keeps reminder_schedule in step with the settings, with a row while the reminder is on, rescheduled (next_at null) when its time or zone changes.';
comment on function run_reminders(timestamptz, integer) is
    'One tick of the reminder clock at now_at over up to max_rows users: schedules those without next_at, then handles those due, queuing the reminder unless they have written today (late, once, after a server was down; never for a day missed entirely) and scheduling tomorrow''s. Returns each user handled with sent, written or rescheduled.';

-- Photos.
comment on function photo_hash_lock(text) is
    'The advisory lock per content hash that orders a file''s removal against a row that names it: an upload inserts its row under it and a collector checks for rows under it, so a file is never removed while a row naming it commits.';
comment on function photo_hash_unnamed(text) is
    'Whether no upload and no entry photo names the hash, asked under its lock, which the caller''s transaction keeps until it has removed the file.';
comment on function queue_photo_garbage() is
    'Statement trigger on deleted uploads and entry photos, whatever deletes them: queues their hashes in photo_garbage in the same transaction, so that a crash before the files are removed loses nothing.';
comment on function record_photo_upload(uuid, text, text, integer, integer, integer, integer, bigint) is
    'Records the caller''s upload, whose file is already stored, with its CRC-32 (so that an export can stream each photo into a ZIP reading it once), unless the day''s limit is reached: then false, and the file is queued for removal. The row is inserted under the hash''s lock, so that no collector removes the file meanwhile.';
comment on function record_photo_upload(uuid, text, text, integer, integer, integer, integer) is
    'The signature without a checksum, for servers of the previous release while a deploy rolls: records the upload as the eight-argument form does, with no CRC-32.';
comment on function photos_per_entry(uuid) is
    'Photos an entry may carry on the user''s plan: 1 on free, 4 on premium or couple (a partner''s couple plan included). set_entry_photos enforces it (ZN006).';
comment on function set_entry_photos(uuid, uuid, uuid[]) is
    'Makes the caller''s entry''s photos exactly photos, in order: kept ones stay, new ones move from the caller''s uploads with their checksum, dropped ones are deleted and their files follow. ZN004 for a photo that is not the caller''s upload, ZN005 for one attached to another entry, ZN006 for more than the plan allows; an entry that is not the caller''s own is left alone for the edit to refuse.';
comment on function photo_file(uuid) is
    'The file, type and size behind a signed photo URL, attached or not. The URL''s signature is already checked and no caller is signed in, so it reads as the owner.';
comment on function claim_photo_garbage(integer) is
    'Takes up to max_hashes queued hashes, locked against other collectors (SKIP LOCKED) and against uploads of the same bytes (photo_hash_lock), each with whether a row still names it; the photo sweeper removes the unnamed ones'' files before it commits. Also forgets upload counts older than two days.';
comment on function expire_photo_uploads(interval) is
    'Deletes uploads never attached within max_age, whose hashes then queue themselves for collection, and returns how many; the photo sweeper calls it.';
comment on function unnamed_photo_files(text[]) is
    'Of the hashes of files found in the photo store, those that no row names (left by a crash between writing a file and its row), locked in hash order for the caller''s transaction, which removes their files before it commits.';
comment on function photo_garbage_backlog() is
    'The collection queue''s length, for a gauge: it grows only while files are not being removed.';

-- Billing.
comment on function user_plan(uuid) is
    'A user''s plan: premium (their own), couple (their own couple plan, or a premium couple-plan partner in a couple diary they share) or free. The partner''s grant is read from the memberships, not stored, so it ends the moment either leaves.';
comment on function billing_user(text[]) is
    'The first of a RevenueCat event''s user ids that is one of our users; ids that are not our user ids are ignored.';
comment on function apply_billing_event(text) is
    'Applies a recorded RevenueCat event (just received, or waiting for its user) to the user''s premium_* fields and records the outcome: applied, older, ignored or unknown_user. The users'' rows are locked, so one user''s events apply in their own order whatever order they arrive in.';
comment on function record_billing_event(text, text, text[], text[], text[], text, boolean, timestamptz, timestamptz, text, boolean, jsonb) is
    'Records a RevenueCat webhook event once and applies it: a repeated event id returns duplicate and changes nothing. With accepted false (a sandbox event where those are not accepted) it only records it.';
comment on function apply_waiting_billing_events() is
    'Trigger on new users: applies, in order, the billing events that named them while they were unknown, if received within the last 7 days.';

-- Data safety.
comment on function record_export(integer) is
    'Counts an export the caller starts, unless the day''s limit (diary and personal exports together) is reached: then false.';
comment on function my_billing_events() is
    'The caller''s purchase events, for their personal export (APPI disclosure). billing_events itself is readable by nobody, since one event may name several users.';

-- Sign in with Apple.
comment on function store_apple_token(uuid, text, bytea) is
    'Keeps the caller''s newest Apple refresh token, sealed by the server, replacing any earlier one; it is kept only to be revoked when the account is deleted.';
comment on function queue_apple_revocation() is
    'Trigger on deleted users: however the account is deleted, moves its Apple token to the revocation queue in the same transaction, and notifies apple_revocations.';
comment on function claim_apple_revocations(integer, interval) is
    'Leases up to max_rows due revocations (SKIP LOCKED), so that one server at a time tries each.';
comment on function finish_apple_revocation(uuid, text, integer, text) is
    'Settles a claimed revocation and returns its state: revoked finishes it, failed records that Apple refuses it for good, retry makes it due again after delay_ms, or failed once it was queued more than 7 days ago. The sealed token goes once the row is finished either way.';
comment on function apple_revocation_counts() is
    'Pending and failed revocations, for the gauges; also deletes finished rows older than 90 days, kept until then as the record of what became of them.';
comment on function apply_apple_notification(text, text, text, text) is
    'Applies one verified server-to-server notification from Apple, once per jti: consent-revoked revokes the sessions and drops the Apple token, account-delete deletes the account, email-disabled and email-enabled update the email. Returns duplicate, unknown_user, sessions_revoked, account_deleted, email_updated or ignored.';

-- Invite codes.
comment on function register_invite_code(uuid) is
    'Claims the diary''s current invite code in invite_codes, which keeps codes unique across the service where a table sharded by diary cannot. A code another diary holds fails with 23505 on invite_codes_pkey, and the caller draws again.';
comment on function invite_code_diary(text) is
    'The diary an invite code names, if it is still that diary''s current code; a replaced code answers as invalid. join_diary finds the diary by id through it, so that on Citus the lock goes to the diary''s own shard.';
