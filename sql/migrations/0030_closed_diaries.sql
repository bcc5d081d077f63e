-- A diary is never deleted because its last member left. It is closed instead: nobody sees
-- it, its invite code stops working, and for a stated window (the server's
-- CLOSED_DIARY_RETENTION_DAYS) any former member may restore it or export their own entries.
-- Then the closed-diary worker deletes it, and the photo sweep collects its files.
--
-- closed_at is when the last member left; purge_at, when the worker told its former members
-- the date it will be deleted: that date is a promise, so a later change of the window keeps it.
alter table diaries add column closed_at timestamptz, add column purge_at timestamptz;
create index diaries_closed on diaries (closed_at) where closed_at is not null;

-- Who left a diary, and when: for their right to export their own entries for the window,
-- and to restore it when it closes. Keyed by diary, as every tenant table is; a member who
-- joins again is a member, not a former one. No foreign keys: on a laid-out Citus cluster this
-- table is made on the coordinator before `migrate --citus` lays it out by diary, and Citus
-- refuses a key from a coordinator's table to a distributed one. The functions that delete a
-- diary or an account delete its rows here first (forget_diary, forget_user).
create table former_members (
    diary_id uuid not null,
    user_id uuid not null,
    left_at timestamptz not null default now(),
    primary key (diary_id, user_id)
);
create index former_members_user on former_members (user_id, diary_id);
alter table former_members enable row level security;
alter table former_members force row level security;
grant select on former_members to diary_app;

-- The push that tells former members a diary closed, and when it will be deleted.
alter table push_outbox drop constraint push_outbox_kind_check;
alter table push_outbox add constraint push_outbox_kind_check check (kind in ('entry', 'reminder', 'diary_closed'));
