package import DiaryModels
package import Foundation
import PostgresClient

/// Diaries and their members, always as the caller (see `RequestScope`).
package struct DiaryRepository: Sendable {
    let scope: RequestScope

    package init(scope: RequestScope) {
        self.scope = scope
    }

    /// A diary as the caller sees it: their role, counts, last entry, unread entries by
    /// others, and members (aliased in anonymous diaries), in one statement for any number
    /// of diaries. Members come as parallel arrays in one order, which decode without a
    /// JSON parser. Nothing here reads more than one entry: the unread count is the
    /// caller's maintained counter (migration 0007), the last entry one probe of
    /// entries_timeline, so the cost does not grow with the diary's history.
    /// `app_user_id()` is called, not selected once: Citus refuses a subquery without FROM
    /// beside the correlated one, and here it is an index condition, evaluated once anyway.
    static var diaryColumns: PostgresQuery { columns(ofDiary: "diaries.id") }

    /// One diary's columns, as `diaryColumns`, with its id bound wherever those correlate
    /// with the diary's row: on Citus the statement then routes to the diary's one shard,
    /// alone or inside a larger one (`ChangeLogRepository.changesStatement`), where the
    /// correlated spelling is planned across every shard, or refused ("complex joins are
    /// only supported when all distributed tables are co-located"). The caller still says
    /// `where diaries.id = …`.
    static func diaryColumns(ofDiary diary: UUID) -> PostgresQuery { columns(ofDiary: "\(diary)") }

    /// What a write of a diary answers: `diary_response`, the twin of `diaryColumns` in SQL
    /// (ReadBackTests), read in the write's transaction (`ReadBack`).
    static func readBack(_ diary: PostgresQuery) -> ReadBack {
        .response("diary_response", routedBy: "read_back_diary", diary)
    }

    /// `diaryColumns`, with `diary` spelling the diary's id: a column or a bound value.
    private static func columns(ofDiary diary: PostgresQuery) -> PostgresQuery {
        """
        select diaries.id, diaries.name, diaries.type, diaries.invite_code, me.role, diaries.created_at,
            cardinality(members.member_ids) as member_count,
            (select e.created_at from entries e where e.diary_id = \(diary) order by e.created_at desc limit 1) as last_entry_at,
            me.unread_count,
            members.member_ids, members.member_names, members.member_images, members.member_roles, members.member_joined_at
        from diaries
        join diary_members me on me.diary_id = \(diary) and me.user_id = app_user_id()
        cross join lateral (
            select array_agg(p.public_id order by p.joined_at, p.public_id) as member_ids,
                   array_agg(p.display_name order by p.joined_at, p.public_id) as member_names,
                   array_agg(p.profile_photo order by p.joined_at, p.public_id) as member_images,
                   array_agg(p.role order by p.joined_at, p.public_id) as member_roles,
                   array_agg(p.joined_at order by p.joined_at, p.public_id) as member_joined_at
            from member_profiles p where p.diary_id = \(diary)) as members
        """
    }

    /// `invites` mints the invite link; `links`, the members' profile photo URLs.
    static func diary(from row: PostgresRow, invites: InviteLinks, links: PhotoLinks) throws -> Diary {
        guard let type = DiaryType(rawValue: try row.decode("type")), let role = MemberRole(rawValue: try row.decode("role")) else {
            throw PostgresDecodingError(column: "type", targetType: "DiaryType", failure: .malformed("unknown diary type or role"))
        }
        let inviteCode: String = try row.decode("invite_code")
        return Diary(
            id: try row.decode("id"), name: try row.decode("name"), type: type, inviteCode: inviteCode, inviteUrl: invites.url(for: inviteCode),
            role: role, memberCount: try row.decode("member_count"),
            members: try members(from: row, links: links),
            createdAt: try row.decode("created_at"), lastEntryAt: try row.decode("last_entry_at"),
            unreadCount: try row.decode("unread_count")
        )
    }

    private static func members(from row: PostgresRow, links: PhotoLinks) throws -> [Member] {
        let ids = try row.decodeAggregate("member_ids", as: UUID.self)
        let names = try row.decodeAggregate("member_names", as: String.self, count: ids.count)
        let images = try row.decodeAggregate("member_images", as: String?.self, count: ids.count)
        let roles = try row.decodeAggregate("member_roles", as: String.self, count: ids.count)
        let joinedAt = try row.decodeAggregate("member_joined_at", as: Date.self, count: ids.count)
        return try ids.indices.map { index in
            guard let role = MemberRole(rawValue: roles[index]) else {
                throw PostgresDecodingError(column: "member_roles", targetType: "MemberRole", failure: .malformed("unknown role"))
            }
            return Member(userId: ids[index], displayName: names[index], profileImageUrl: links.profileImageURL(images[index]), role: role, joinedAt: joinedAt[index])
        }
    }

    /// The caller's diaries, the latest written first. On Citus one statement a diary
    /// (`RequestScope.readEachDiary`), so that a worker down hides only its own diaries'
    /// answer; on one PostgreSQL one statement.
    package func list() async throws -> [Diary] {
        guard scope.readsDiaryByDiary else {
            return try await scope.read(Self.listStatements)[1].map { try Self.diary(from: $0, invites: scope.inviteLinks, links: scope.photoLinks) }
        }
        let diaries = try await scope.readEachDiary { "\(Self.diaryColumns(ofDiary: $0)) where diaries.id = \($0) and \(DiariesPolicy.select.using)" }
        return try diaries.compactMap { try $0.rows.first.map { try Self.diary(from: $0, invites: scope.inviteLinks, links: scope.photoLinks) } }.sorted(by: Self.latestWrittenFirst)
    }

    /// The home list on one PostgreSQL (PlanGuardTests holds its cost to the diaries, not their
    /// histories): each diary's last entry walks the timeline's index.
    static let listStatements: [PostgresQuery] = [
        EntryRepository.walkTheTimeline,
        """
        \(diaryColumns)
        where \(DiariesPolicy.select.using)
        order by last_entry_at desc nulls last, diaries.created_at desc
        """,
    ]

    /// `order by last_entry_at desc nulls last, created_at desc`.
    static func latestWrittenFirst(_ a: Diary, _ b: Diary) -> Bool {
        switch (a.lastEntryAt, b.lastEntryAt) {
        case let (x?, y?) where x != y: x > y
        case (_?, nil): true
        case (nil, _?): false
        default: a.createdAt > b.createdAt
        }
    }

    static func findStatements(_ id: UUID) -> [PostgresQuery] {
        [
            ChangeLogRepository.positionStatement(ofDiary: id),
            EntryRepository.walkTheTimeline,
            "\(Self.diaryColumns(ofDiary: id)) where diaries.id = \(id) and \(DiariesPolicy.select.using)",
        ]
    }

    /// With `changesCursor`: the diary's position, read before the diary so that following
    /// the changes from there misses nothing the diary does not show.
    package func find(_ id: UUID) async throws -> Diary {
        let results = try await scope.read(Self.findStatements(id))
        guard let row = results[2].first else { throw DomainError.notFound("no such diary") }
        var diary = try Self.diary(from: row, invites: scope.inviteLinks, links: scope.photoLinks)
        diary.changesCursor = try ChangeLogRepository.position(ofDiary: id, from: results[0]).encoded
        return diary
    }

    /// Creates a diary owned by the caller, with the id the client chose if it did. A retry
    /// of the same create (the id, name and type of a diary the caller owns) answers that
    /// diary, before the plan's and the caps' checks: `create_diary` does nothing then. Any
    /// other diary with that id is `conflict`. A new invite code that collides with an
    /// existing one (about one in 10^15 per diary) is drawn again.
    /// A free user who already owns `freePlanDiaries` diaries gets `premium_required`,
    /// counted under a lock on their row, so concurrent creates cannot pass it together.
    package func create(id chosen: UUID? = nil, name: String, type: DiaryType, freePlanDiaries: Int) async throws -> Creation<Diary> {
        var attempt = 1
        while true {
            let id = chosen ?? UUID()
            do {
                let results = try await scope.run(
                    [
                        EntryRepository.diaryVisible(id),
                        "select create_diary(\(id), \(name), \(type.rawValue), \(freePlanDiaries)::integer)",
                    ],
                    thenRead: [Self.readBack("\(id)")]
                )
                // The first statement reads as the caller: a diary of someone else's is not
                // seen there, and not here either.
                let existed = !results[0].isEmpty
                guard let row = results[2].first else {
                    if existed || chosen == nil { throw DomainError.inconsistent("the new diary cannot be read back") }
                    throw Self.idConflict
                }
                let diary = try Self.diary(from: row, invites: scope.inviteLinks, links: scope.photoLinks)
                if !existed { return .created(diary) }
                guard diary.role == .owner, diary.name == name, diary.type == type else { throw Self.idConflict }
                return .replayed(diary)
            } catch let error as PostgresError where error.constraint == "invite_codes_pkey" && attempt < 3 {
                attempt += 1
            }
        }
    }

    static let idConflict = DomainError(.conflict, "a diary with this id already exists")

    /// Renames the diary through `rename_diary`, which logs it: members see it (else 404),
    /// only the owner may change it (else 403).
    package func rename(_ id: UUID, to name: String) async throws -> Diary {
        let results = try await scope.run(
            ["select rename_diary(\(id), \(name)) as outcome"],
            thenRead: [Self.readBack("\(id)")]
        )
        try PolicyTwin.requireDone(results[0], missing: "no such diary", forbidden: "only the owner can rename the diary")
        guard let row = results[1].first else { throw DomainError.notFound("no such diary") }
        return try Self.diary(from: row, invites: scope.inviteLinks, links: scope.photoLinks)
    }

    /// Replaces the invite code, so the old one stops working. Owner only.
    package func rotateInviteCode(_ id: UUID) async throws -> String {
        var attempt = 1
        while true {
            do {
                let results = try await scope.run(
                    ["select rotate_invite_code(\(id)) as outcome"],
                    thenRead: [Self.readBack("\(id)")]
                )
                try PolicyTwin.requireDone(results[0], missing: "no such diary", forbidden: "only the owner can change the invite code")
                guard let code = try results[1].first?.decode("invite_code", as: String.self) else { throw DomainError.inconsistent("the new invite code cannot be read back") }
                return code
            } catch let error as PostgresError where error.constraint == "invite_codes_pkey" && attempt < 3 {
                attempt += 1
            }
        }
    }

    /// Joins by invite code through `join_diary`, which keeps the diary under its cap, and
    /// answers the diary it names: by its id, since a rotation of the code right after the
    /// join would leave a read by code with nothing.
    package func join(inviteCode: String) async throws -> Diary {
        let joined = try await scope.run(writing: "join_diary(\(inviteCode), (select app_user_id()))") { [Self.readBack($0)] }
        guard let row = joined[0].first else { throw DomainError.inconsistent("the joined diary cannot be read back") }
        return try Self.diary(from: row, invites: scope.inviteLinks, links: scope.photoLinks)
    }

    /// The type and size of the diary `inviteCode` opens, as `join_diary` would find it;
    /// `invite_code_invalid` for a code that opens nothing (unknown, rotated, or a closed diary's).
    package func preview(inviteCode: String) async throws -> InvitePreview {
        let rows = try await scope.read("select diary_type, member_count from invite_preview(\(inviteCode))")
        guard let row = rows.first else { throw DomainError(.inviteCodeInvalid, "invite code is not valid") }
        guard let type = DiaryType(rawValue: try row.decode("diary_type")) else { throw DomainError.inconsistent("a diary of an unknown type") }
        return InvitePreview(type: type, memberCount: try row.decode("member_count"))
    }

    package func members(of id: UUID) async throws -> [Member] {
        let results = try await scope.read([
            "select 1 from diaries where diaries.id = \(id) and \(DiariesPolicy.select.using)",
            """
            select \(Self.memberColumns)
            from member_profiles p join diary_members on diary_members.diary_id = p.diary_id and diary_members.user_id = p.user_id
            where p.diary_id = \(id) and \(DiaryMembersPolicy.select.using)
            order by p.joined_at, p.public_id
            """,
        ])
        guard !results[0].isEmpty else { throw DomainError.notFound("no such diary") }
        return try results[1].map { try Self.member(from: $0, links: scope.photoLinks) }
    }

    /// A member's columns from `member_profiles p`, for `member(from:)`.
    static let memberColumns: PostgresFragment = "p.public_id, p.display_name, p.profile_photo, p.role, p.joined_at"

    /// `links` mints the member's profile photo URL.
    static func member(from row: PostgresRow, links: PhotoLinks) throws -> Member {
        Member(
            userId: try row.decode("public_id"), displayName: try row.decode("display_name"),
            profileImageUrl: links.profileImageURL(try row.decode("profile_photo")),
            role: MemberRole(rawValue: try row.decode("role")) ?? .member, joinedAt: try row.decode("joined_at")
        )
    }

    /// Leaves the diary (`member` is the caller) or, as its owner, removes someone.
    /// `remove_diary_member` applies `diary_members_delete` and hands ownership on.
    package func remove(member: UUID, from diary: UUID) async throws {
        let rows = try await scope.run("select remove_diary_member(\(diary), \(member)) as outcome")
        try PolicyTwin.requireDone(rows, missing: "no such member", forbidden: "only the owner can remove other members")
    }
}
