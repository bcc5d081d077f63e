package import DiaryModels
import PostgresClient

/// The caller's own account, as the caller (see `RequestScope`).
package struct UserRepository: Sendable {
    let scope: RequestScope

    package init(scope: RequestScope) {
        self.scope = scope
    }

    /// Which row is asked for, not a permission: users_select also shows co-members.
    static var callersRow: PostgresFragment { "users.id = (select app_user_id()) and " + UsersPolicy.select.using }

    /// The caller's account, as `me` reads it.
    static var callersAccount: PostgresQuery { "select \(UserColumns.me) from users where \(callersRow)" }

    /// The caller's account as a write of it answers: `users` is a reference table, which
    /// Citus reads on the coordinator, so the statement is the same on both (`ReadBack`).
    static var readBack: ReadBack { .statement(callersAccount) }

    package func me() async throws -> Me {
        let rows = try await scope.read(Self.callersAccount)
        // A live session whose user is gone cannot happen (sessions cascade), but if it did it is not a 500.
        guard let row = rows.first else { throw DomainError.unauthenticated("the account no longer exists") }
        return try UserColumns.me(from: row, links: scope.photoLinks)
    }

    /// Applies the fields present in `patch` through `update_me`, which reschedules the
    /// reminder when its settings change; validation has happened in the route.
    package func update(_ patch: UpdateMeRequest) async throws -> Me {
        let settings = patch.settings.map {
            PostgresJSON(UserColumns.StoredSettings(
                notification_new_entry: $0.notificationNewEntry, notification_reminder: $0.notificationReminder, reminder_time: $0.reminderTime
            ))
        }
        let results = try await scope.run(
            // The profile photo is never a URL given here (PUT /v1/me/photo); the route refuses one.
            ["select update_me(\(patch.displayName), \(String?.none), \(patch.timeZone), \(settings))"],
            thenRead: [Self.readBack]
        )
        guard let row = results[1].first else { throw DomainError.unauthenticated("the account no longer exists") }
        return try UserColumns.me(from: row, links: scope.photoLinks)
    }

    /// Deletes the account and everything that is only theirs, in one transaction.
    package func deleteAccount() async throws {
        _ = try await scope.run("select delete_my_account()")
    }

    /// Revokes the session the request came with.
    package func logout() async throws {
        // The devices it registered go with it: a signed-out phone gets no more pushes. So do
        // the user's devices bound to no session (registered before devices were bound, or
        // through a release that did not bind them): which session they belong to cannot be
        // known, and the app registers its device again at every launch.
        _ = try await scope.run([
            "update sessions set revoked_at = now() where id = \(scope.identity.sessionID) and user_id = (select app_user_id())",
            // Its sockets close at once (`ChangeFeed`), once this commits.
            "select announce_session_end(\(scope.identity.sessionID))",
            "delete from devices where (devices.session_id = \(scope.identity.sessionID) or devices.session_id is null) and \(DevicesPolicy.delete.using)",
        ])
    }

    /// Today's question, "today" being the caller's date in their time zone.
    package func todaysQuestion() async throws -> TodayQuestion {
        let rows = try await scope.read("""
            with today as (
                select (now() at time zone users.time_zone)::date as day from users where \(Self.callersRow)
            )
            select to_char(today.day, 'YYYY-MM-DD') as day, questions.text
            from today, questions
            where questions.id = (today.day - date '2020-01-01') % (select count(*) from questions) + 1
            """)
        guard let row = rows.first else { throw DomainError.unauthenticated("the account no longer exists") }
        return TodayQuestion(date: try row.decode("day"), question: try row.decode("text"))
    }
}
