import DiaryAPI
import Foundation

/// What the realtime stream delivers, in order.
public enum RealtimeEvent: Sendable {
    /// The socket is open and delivers from `cursor` on (after a reconnection: from the last
    /// change delivered, so nothing is missed and nothing repeated).
    case connected(cursor: String)
    /// A change in one of the caller's diaries.
    case change(DiaryChange)
    /// After the server said the cursor was too old (`resync`), a diary whose missed changes
    /// could not be replayed: replace what is held with this diary and first timeline page.
    case reloaded(Diary, EntryPage)
    /// The socket closed; the stream reconnects after `retryIn` unless the reason is final.
    case disconnected(RealtimeCloseReason, retryIn: Duration)
}

/// Why the realtime socket closed, from its close code.
public enum RealtimeCloseReason: Sendable, Hashable {
    /// 4401: the token expired, a renewal was refused, or the session ended. DiaryKit
    /// refreshes and reconnects; when the session is over the stream ends with `sessionEnded`.
    case authenticationExpired
    /// 4408: this side did not read for 10 s.
    case tooSlow
    /// 1001: the server is stopping, or a ping went unanswered.
    case serverGoingAway
    /// 1003, 1008 or 1009: a binary frame, too many frames, or one too large was sent.
    case policyViolation(code: Int)
    /// The upgrade was refused, or the connection broke without a close frame.
    case connectionLost
    /// Any other close code.
    case other(code: Int)

    /// The reason for a close code, or `connectionLost` for none.
    public init(closeCode: Int?) {
        switch closeCode {
        case 4401: self = .authenticationExpired
        case 4408: self = .tooSlow
        case 1001: self = .serverGoingAway
        case 1003, 1008, 1009: self = .policyViolation(code: closeCode!)
        case nil: self = .connectionLost
        case let code?: self = .other(code: code)
        }
    }
}

/// How the realtime stream reconnects.
public struct RealtimeOptions: Sendable {
    /// The first wait after a close; it doubles with each failure in a row.
    public var initialBackoff: Duration
    /// The longest wait.
    public var maximumBackoff: Duration
    /// Renew the token on the open socket this long before it expires.
    public var renewalMargin: Duration

    /// Creates options; the defaults suit an app.
    public init(initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(30),
                renewalMargin: Duration = .seconds(60)) {
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.renewalMargin = renewalMargin
    }

    /// The wait before reconnection attempt `failures` (0 for the first), with up to 20%
    /// jitter so that clients a restart disconnected together do not return together.
    func backoff(afterFailures failures: Int) -> Duration {
        let doubled = initialBackoff * Int(pow(2.0, Double(min(failures, 16))))
        let capped = min(doubled, maximumBackoff)
        return capped + capped * Double.random(in: 0...0.2)
    }
}
