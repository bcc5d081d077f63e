-- What the HTTP API needs beyond the core schema: dev accounts, sessions with
-- rotating refresh tokens, the caller's identity for policies, anonymous aliases,
-- and the bank of daily questions.

alter table users
    add column dev_name text unique check (char_length(dev_name) between 1 and 50);

-- A member of an anonymous diary appears to the others only as this alias.
alter table diary_members
    add column alias_id uuid not null default gen_random_uuid();

create unique index diary_members_alias on diary_members (diary_id, alias_id);

create table sessions (
    id         uuid primary key default gen_random_uuid(),
    user_id    uuid not null references users (id) on delete cascade,
    created_at timestamptz not null default now(),
    revoked_at timestamptz
);

create index sessions_user on sessions (user_id);

-- Refresh tokens are stored only as SHA-256 hashes. A token is used once: exchanging
-- it sets rotated_at and issues its successor.
create table refresh_tokens (
    token_hash bytea primary key check (octet_length(token_hash) = 32),
    session_id uuid not null references sessions (id) on delete cascade,
    issued_at  timestamptz not null default now(),
    rotated_at timestamptz,
    expires_at timestamptz not null
);

create index refresh_tokens_session on refresh_tokens (session_id);

-- Exchanges a refresh token for its successor, whose hash the caller computed (the
-- successor is derived from the presented token, so a retry derives the same one).
--   rotated:        the token was current; it is now used and the successor is current
--   replayed:       the token was exchanged less than 10 s ago for this same successor,
--                   which is still unused: a retry after a lost response
--   reuse_detected: an already-used token came back; the whole session is revoked
--   revoked, unknown: nothing is issued
-- Never raises for a bad token, so that a revocation commits.
create function rotate_refresh_token(presented bytea, successor bytea, lifetime interval)
returns table (outcome text, session_id uuid, user_id uuid, issued_at timestamptz)
language plpgsql volatile
set search_path = pg_catalog, public
as $$
declare
    token refresh_tokens%rowtype;
    owning_session sessions%rowtype;
    next_token refresh_tokens%rowtype;
begin
    select * into token from refresh_tokens t where t.token_hash = presented for update;
    if not found then
        return query select 'unknown'::text, null::uuid, null::uuid, null::timestamptz;
        return;
    end if;
    select * into owning_session from sessions s where s.id = token.session_id for update;
    if owning_session.revoked_at is not null or token.expires_at < now() then
        return query select 'revoked'::text, owning_session.id, owning_session.user_id, null::timestamptz;
        return;
    end if;
    if token.rotated_at is null then
        update refresh_tokens t set rotated_at = now() where t.token_hash = presented;
        insert into refresh_tokens (token_hash, session_id, issued_at, expires_at)
        values (successor, owning_session.id, now(), now() + lifetime);
        return query select 'rotated'::text, owning_session.id, owning_session.user_id, now();
        return;
    end if;
    select * into next_token from refresh_tokens t where t.token_hash = successor and t.session_id = owning_session.id;
    if token.rotated_at > now() - interval '10 seconds' and found and next_token.rotated_at is null then
        return query select 'replayed'::text, owning_session.id, owning_session.user_id, next_token.issued_at;
        return;
    end if;
    update sessions s set revoked_at = now() where s.id = owning_session.id;
    return query select 'reuse_detected'::text, owning_session.id, owning_session.user_id, null::timestamptz;
end
$$;

-- The caller, as set for this transaction by authenticate(); NULL when unset.
-- Policies call it through a scalar subquery so it is evaluated once per statement.
create function app_user_id() returns uuid
language sql stable
set search_path = pg_catalog, public
as $$
    select nullif(current_setting('app.user_id', true), '')::uuid
$$;

-- Sets the caller's identity for the current transaction only, after checking that the
-- session is live and belongs to that user (a deleted user has no sessions left).
create function authenticate(session uuid, caller uuid) returns void
language plpgsql volatile
set search_path = pg_catalog, public
as $$
begin
    if not exists (
        select 1 from sessions s
        where s.id = authenticate.session and s.user_id = authenticate.caller and s.revoked_at is null
    ) then
        raise exception 'session is not valid' using errcode = 'ZN401';
    end if;
    perform set_config('app.user_id', caller::text, true);
end
$$;

create function is_diary_member(diary uuid) returns boolean
language sql stable
set search_path = pg_catalog, public
as $$
    select exists (select 1 from diary_members m where m.diary_id = diary and m.user_id = (select app_user_id()))
$$;

create function is_diary_owner(diary uuid) returns boolean
language sql stable
set search_path = pg_catalog, public
as $$
    select exists (select 1 from diary_members m where m.diary_id = diary and m.user_id = (select app_user_id()) and m.role = 'owner')
$$;

-- Members as the caller may see them. In an anonymous diary every other member is
-- an alias (a per-diary id and 匿名N); their user id, name and image never leave here.
create view member_profiles with (security_invoker = true) as
select
    m.diary_id,
    m.user_id,
    m.role,
    m.joined_at,
    hidden.is_hidden,
    case when hidden.is_hidden then m.alias_id else m.user_id end as public_id,
    case when hidden.is_hidden
        then '匿名' || row_number() over (partition by m.diary_id order by m.joined_at, m.alias_id)
        else u.display_name
    end as display_name,
    case when hidden.is_hidden then null else u.profile_image_url end as profile_image_url
from diary_members m
join diaries d on d.id = m.diary_id
join users u on u.id = m.user_id
cross join lateral (
    select d.type = 'anonymous' and m.user_id is distinct from (select app_user_id()) as is_hidden
) hidden;

create table questions (
    id   integer primary key,
    text text not null unique check (char_length(text) between 1 and 200)
);

insert into questions (id, text) values
    (1, '今日いちばん嬉しかったことは何？'),
    (2, '今日食べたものの中で、いちばん美味しかったのは？'),
    (3, '最近、思わず笑ってしまったことは？'),
    (4, '今日の空はどんな色だった？'),
    (5, '今、いちばん行きたい場所はどこ？'),
    (6, '子どもの頃の夢は何だった？'),
    (7, '最近ハマっているものは？'),
    (8, '今日、誰かに感謝したいことは？'),
    (9, '休みの日にしたいことは？'),
    (10, '好きな季節とその理由は？'),
    (11, '最近聴いている音楽は？'),
    (12, '今週の小さな目標は？'),
    (13, '今日の自分に点数をつけるなら何点？'),
    (14, '最近読んだ本や記事で印象に残ったものは？'),
    (15, '今いちばん欲しいものは？'),
    (16, '思い出の旅行先はどこ？'),
    (17, '最近できるようになったことは？'),
    (18, '今日いちばん頑張ったことは？'),
    (19, '好きな食べ物ベスト3は？'),
    (20, '朝型？それとも夜型？'),
    (21, '最近見た夢を覚えてる？'),
    (22, '今日出会った小さな幸せは？'),
    (23, '一緒にやってみたいことは？'),
    (24, '最近、心が温かくなった瞬間は？'),
    (25, '今の気分を天気で表すと？'),
    (26, 'もし一日だけ休みがあったら何をする？'),
    (27, '子どもの頃に好きだった遊びは？'),
    (28, '最近気になっているニュースは？'),
    (29, '今日の晩ごはんは何だった？'),
    (30, '明日楽しみにしていることは？'),
    (31, '最近買ってよかったものは？'),
    (32, '自分の好きなところを一つ教えて'),
    (33, '最近ちょっと疲れたなと思ったことは？'),
    (34, 'もらって嬉しかったプレゼントは？'),
    (35, '今、頑張っていることは？'),
    (36, '好きな映画やドラマは？'),
    (37, 'いつか住んでみたい街は？'),
    (38, '最近会いたいと思った人は？'),
    (39, '今日見つけた季節の変化は？'),
    (40, '落ち込んだときの元気の出し方は？'),
    (41, '最近挑戦したことは？'),
    (42, '今年中にやりたいことは？'),
    (43, '初めて会った日のことを覚えてる？'),
    (44, '最近作った料理は？'),
    (45, 'お気に入りの場所はどこ？'),
    (46, '寝る前にすることは？'),
    (47, '最近心に残った言葉は？'),
    (48, '今日のラッキーだったことは？'),
    (49, '最近の「ありがとう」を教えて'),
    (50, 'もし魔法が使えたら何をしたい？'),
    (51, '今日の服装のポイントは？'),
    (52, '最近一番笑った話は？'),
    (53, '得意なことは何？'),
    (54, '苦手だけど克服したいことは？'),
    (55, '最近の朝ごはんは？'),
    (56, '思い出の写真について教えて'),
    (57, '好きな飲み物は？'),
    (58, '最近散歩したのはどこ？'),
    (59, '今日話した中で一番印象的な会話は？'),
    (60, '十年後の自分に一言'),
    (61, '最近感動したことは？'),
    (62, '好きな動物は？'),
    (63, '今週のハイライトは？'),
    (64, '最近始めた習慣は？'),
    (65, '今日のお昼ごはんは？'),
    (66, '行ってみたいお店は？'),
    (67, '最近のマイブームは？'),
    (68, '小さい頃の思い出の味は？'),
    (69, '最近の悩みを一つ教えて'),
    (70, '今日はどんな一日だった？'),
    (71, '好きな言葉は？'),
    (72, '最近のお気に入りの服は？'),
    (73, 'おすすめしたいものは？'),
    (74, '最近気づいた自分の変化は？'),
    (75, '家族との思い出を一つ教えて'),
    (76, '友だちとの思い出を一つ教えて'),
    (77, '最近の癒やしは？'),
    (78, '今日のBGMをつけるなら？'),
    (79, '最近行ってよかった場所は？'),
    (80, '一日の中で好きな時間帯は？'),
    (81, '最近ほっとした瞬間は？'),
    (82, '雨の日の過ごし方は？'),
    (83, '最近学んだことは？'),
    (84, '好きな季節のイベントは？'),
    (85, '理想の休日の過ごし方は？'),
    (86, '最近食べたいものは？'),
    (87, '最近の小さな贅沢は？'),
    (88, 'もし旅に出るなら誰と行きたい？'),
    (89, '最近がんばった自分にご褒美をあげるなら？'),
    (90, '今の部屋のお気に入りポイントは？'),
    (91, '最近見上げた空はどうだった？'),
    (92, '最近うれしかったメッセージは？'),
    (93, '好きな香りは？'),
    (94, '最近の「初めて」を教えて'),
    (95, '今いちばん大切にしていることは？'),
    (96, '最近のちょっとした失敗談は？'),
    (97, '相手に聞いてみたいことは？'),
    (98, '今日の自分をひと言で表すと？'),
    (99, '最近の楽しみは？'),
    (100, '明日の自分へのメッセージは？');

revoke all on function rotate_refresh_token(bytea, bytea, interval) from public;
revoke all on function authenticate(uuid, uuid) from public;
