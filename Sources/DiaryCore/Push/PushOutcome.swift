import APNSClient
import PostgresClient

/// What Apple's answer means for one outbox row.
enum PushOutcome: Sendable, Equatable {
    case sent
    /// Apple is busy or down, or the connection failed: again after a backoff.
    case retry(after: Duration, reason: String)
    /// Our credentials or topic are refused: the row waits, and is never dropped for it.
    case hold(reason: String)
    /// Apple refused this notification itself: sending it again cannot help.
    case dead(reason: String)
    /// The device token is no longer valid: the device goes, with its rows.
    case unregistered(reason: String)

    /// The reasons Apple gives for a token that is no longer good for this app.
    static let unregisteredReasons: Set<String> = ["BadDeviceToken", "DeviceTokenNotForTopic", "Unregistered"]
    /// 400s that our configuration causes, not the row.
    static let configurationReasons: Set<String> = ["BadTopic", "MissingTopic", "TopicDisallowed", "MissingProviderToken"]

    init(_ result: APNSResult, attempts: Int, options: PushDelivery.Options) {
        switch result {
        case .delivered:
            self = .sent
        case .failed(let error):
            self = .retry(after: options.backoff.delay(attempt: attempts), reason: error)
        case .refused(let status, let reason, let retryAfter):
            if status == 410 || (status == 400 && Self.unregisteredReasons.contains(reason)) {
                self = .unregistered(reason: reason)
            } else if status == 429 || status >= 500 {
                let backoff = options.backoff.delay(attempt: attempts)
                self = .retry(after: max(backoff, retryAfter ?? .zero), reason: "\(status) \(reason)")
            } else if status == 403 || Self.configurationReasons.contains(reason) {
                self = .hold(reason: "\(status) \(reason)")
            } else {
                self = .dead(reason: "\(status) \(reason)")
            }
        }
    }

    /// The outcome as finish_push_batch and push_sent_total name it.
    var name: String {
        switch self {
        case .sent: "sent"
        case .retry: "retry"
        case .hold: "hold"
        case .dead: "dead"
        case .unregistered: "unregistered"
        }
    }

    func delay(options: PushDelivery.Options) -> Duration {
        switch self {
        case .retry(let after, _): after
        case .hold: options.configurationHold
        case .sent, .dead, .unregistered: .zero
        }
    }

    var error: String {
        switch self {
        case .sent: ""
        case .retry(_, let reason), .hold(let reason), .dead(let reason), .unregistered(let reason): reason
        }
    }
}
