-- A restore shows nobody what they could not read as a member. Only a former member after
-- whose departure nobody changed the diary (wrote, edited, added a photo, read, renamed,
-- joined) may restore it; later departures and deletions, which show nothing new, do not
-- count. Every other former member keeps the export of their own entries for the window.
--
-- diaries.shared_position: the position of the diary's newest change that is neither a
-- departure nor a deletion, kept by log_change and post_entry_as with the position itself.
-- former_members.left_position: the position of the member's own departure. A former
-- member may restore while shared_position < left_position.
alter table diaries add column shared_position bigint not null default 0;
alter table former_members add column left_position bigint;

-- What the log still holds. A departure whose change was pruned stays null, and is not
-- restorable: what happened after it can no longer be known. A diary's shared position is at
-- least its pruned one, for the same reason.
update former_members f set left_position = departed.position
from (select c.diary_id, c.user_id, max(c.position) as position from change_log c where c.kind = 'member.left' group by c.diary_id, c.user_id) departed
where departed.diary_id = f.diary_id and departed.user_id = f.user_id;
update diaries d set shared_position = d.pruned_position where d.pruned_position > 0;
update diaries d set shared_position = greatest(d.shared_position, shared.position)
from (select c.diary_id, max(c.position) as position from change_log c where c.kind not in ('member.left', 'entry.deleted') group by c.diary_id) shared
where shared.diary_id = d.id;
