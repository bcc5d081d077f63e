-- A departure keeps what the former member knew when they left: the diary's name then (a
-- later rename is not theirs to see), and whether they left or were removed by its owner. A
-- removed member keeps their own entries for the window, never the right to open the diary
-- again (restore_diary).
alter table former_members add column diary_name text, add column removed boolean not null default false;
update former_members f set diary_name = d.name from diaries d where d.id = f.diary_id;
alter table former_members alter column diary_name set not null;
comment on table former_members is
    'Who left a diary, when, and the name it had then: for their right to export their own entries for the window and, unless its owner removed them, to restore it when it closes. Rows go with the diary (forget_diary), the account (forget_user), or the window (prune_former_members).';
