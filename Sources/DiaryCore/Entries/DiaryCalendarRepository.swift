package import DiaryModels
package import Foundation
import PostgresClient

/// The days of a month on which a diary has entries, in the caller's time zone.
///
/// The month's bounds become instants in the caller's zone, so the read is one range of
/// `entries_timeline`: its cost follows the month's entries, never the diary's history.
package struct DiaryCalendarRepository: Sendable {
    let scope: RequestScope

    package init(scope: RequestScope) {
        self.scope = scope
    }

    package struct Month: Sendable, Equatable {
        package var year: Int
        package var month: Int

        /// `YYYY-MM`, 1900-01 … 9999-12.
        package init?(_ text: String) {
            guard text.utf8.count == 7, let match = text.wholeMatch(of: /([0-9]{4})-([0-9]{2})/),
                  let year = Int(match.1), let month = Int(match.2),
                  (1900...9999).contains(year), (1...12).contains(month) else { return nil }
            self.year = year
            self.month = month
        }

        package var text: String { String(format: "%04d-%02d", year, month) }
    }

    package func calendar(of diary: UUID, month: Month) async throws -> DiaryCalendar {
        let days: PostgresQuery = """
            with bounds as (
                select (make_date(\(month.year)::integer, \(month.month)::integer, 1)::timestamp at time zone u.time_zone) as starts,
                       ((make_date(\(month.year)::integer, \(month.month)::integer, 1) + interval '1 month')::timestamp at time zone u.time_zone) as ends,
                       u.time_zone as zone
                from users u where u.id = (select app_user_id())
            ), profiles as (select * from member_profiles where member_profiles.diary_id = \(diary))
            select to_char(entries.created_at at time zone bounds.zone, 'YYYY-MM-DD') as day, count(*) as entries,
                array_agg(distinct coalesce(author.public_id, \(EntryRepository.departedAuthorID))) as author_ids
            from bounds
            join entries on entries.created_at >= bounds.starts and entries.created_at < bounds.ends
            left join profiles author on author.user_id = entries.user_id
            where \(EntriesPolicy.select(inDiary: diary))
            group by 1 order by 1
            """
        let results = try await scope.read([EntryRepository.diaryVisible(diary), days])
        guard !results[0].isEmpty else { throw DomainError.notFound("no such diary") }
        let calendarDays = try results[1].map { row in
            CalendarDay(date: try row.decode("day"), entries: try row.decode("entries"), authorIds: try row.decodeAggregate("author_ids", as: UUID.self))
        }
        return DiaryCalendar(month: month.text, days: calendarDays)
    }
}
