-- A device is bound to the session that registered it: once that session is signed out,
-- revoked or past its refresh token's life, the device gets no more pushes (claim_push_batch
-- drops its notifications and forgets it). A device registered by the release before stays
-- unbound (null) until the app registers it again, as it does at every launch.
alter table devices add column session_id uuid;
create index devices_session on devices (session_id) where session_id is not null;
