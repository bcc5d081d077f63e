import Foundation

/// A NOTIFY the feed listens for, decoded once, where it arrives. What `log_change_at` and
/// `announce_session_end` announce (sql/definitions/50_realtime.sql; AnnouncementTests holds
/// the two sides to each other).
enum FeedNotice: Equatable, Sendable {
    /// `<diary> <position>` on diary_changes: the diary's log grew to `position`; `members
    /// <diary> <position>` when who is in it changed too. The release before announced no
    /// position (nil).
    case diaryChanged(UUID, position: Int64?, membersChanged: Bool)
    /// Anything else on diary_changes, the channel alone among them (a bulk load's hundreds of
    /// diaries): every diary may have moved.
    case everyDiary
    /// `<session> ended` on sessions_ended: its sockets close.
    case sessionEnded(UUID)
    /// Anything else on sessions_ended: every session is checked.
    case everySession

    init(channel: String, payload: String) {
        if channel == Announcement.sessionsEnded.channel {
            let words = payload.split(separator: " ", omittingEmptySubsequences: false)
            if words.count == 2, words[1] == "ended", let session = UUID(uuidString: String(words[0])) {
                self = .sessionEnded(session)
            } else {
                self = .everySession
            }
            return
        }
        var words = payload.split(separator: " ", omittingEmptySubsequences: false)[...]
        let members = words.first == "members"
        if members { words = words.dropFirst() }
        guard (1...2).contains(words.count), let diary = UUID(uuidString: String(words[words.startIndex])) else {
            self = .everyDiary
            return
        }
        var position: Int64?
        if words.count == 2 {
            guard let given = Int64(words[words.startIndex + 1]) else {
                self = .everyDiary
                return
            }
            position = given
        }
        self = .diaryChanged(diary, position: position, membersChanged: members)
    }
}
