-- Text limits count user-perceived characters (extended grapheme clusters), as the phone
-- does: the server checks them (Validation.text). A CHECK cannot count clusters, so the
-- database keeps a backstop of ten code points per character: "👨‍👩‍👧" is five, "é" written
-- as e and a combining accent two. NOT VALID, then VALIDATE: existing rows are checked
-- without blocking writes for the scan.
alter table diaries drop constraint diaries_name_check,
    add constraint diaries_name_check check (char_length(name) between 1 and 500) not valid;
alter table diaries validate constraint diaries_name_check;

alter table users drop constraint users_display_name_check,
    add constraint users_display_name_check check (char_length(display_name) between 1 and 500) not valid;
alter table users validate constraint users_display_name_check;

alter table users drop constraint users_dev_name_check,
    add constraint users_dev_name_check check (char_length(dev_name) between 1 and 500) not valid;
alter table users validate constraint users_dev_name_check;

alter table entries drop constraint entries_content_check,
    add constraint entries_content_check check (char_length(content) between 1 and 100000) not valid;
alter table entries validate constraint entries_content_check;

alter table entries drop constraint entries_question_check,
    add constraint entries_question_check check (char_length(question) <= 5000) not valid;
alter table entries validate constraint entries_question_check;
