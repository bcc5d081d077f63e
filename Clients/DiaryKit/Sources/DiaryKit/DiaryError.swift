import Foundation

/// An RFC 9457 problem the server answered with: its HTTP status and stable code.
public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status.
    public var status: Int
    /// The stable code; switch on it, never on `detail`.
    public var code: ProblemCode
    /// A short summary for people.
    public var title: String
    /// What went wrong, for people (and logs): not for matching.
    public var detail: String
    /// The server's request id, for support.
    public var requestID: String?
    /// How long the server asked to wait (`Retry-After`), when it did.
    public var retryAfter: Duration?

    /// Creates a problem; DiaryKit makes these from the server's answers.
    public init(status: Int, code: ProblemCode, title: String, detail: String, requestID: String? = nil, retryAfter: Duration? = nil) {
        self.status = status
        self.code = code
        self.title = title
        self.detail = detail
        self.requestID = requestID
        self.retryAfter = retryAfter
    }

    /// `status code: detail`.
    public var description: String { "\(status) \(code): \(detail)" }

    /// Whether the same request may succeed later: a transient code, or a status that says so
    /// when the code is not known (a proxy's 5xx, a 429).
    public var isTransient: Bool { code.isTransient || status >= 500 || status == 429 }
}

/// Everything a DiaryKit call throws that is not a plain transport error.
public enum DiaryError: Error, Sendable, CustomStringConvertible {
    /// The server answered with a problem.
    case problem(Problem)
    /// No session: sign in first.
    case notSignedIn
    /// The session ended (signed out elsewhere, the refresh token was reused or revoked, the
    /// account was deleted). DiaryKit has forgotten it; sign in again.
    case sessionEnded
    /// The call was made for one user (a queued draft, a refresh) and another is now signed
    /// in, or was while it ran: it was not sent as the new user.
    case sessionChanged
    /// The server answered in a way the contract does not describe.
    case unexpectedResponse(status: Int)

    /// The problem's code, when the server sent one.
    public var code: ProblemCode? {
        if case .problem(let problem) = self { return problem.code }
        return nil
    }

    /// What happened, for logs.
    public var description: String {
        switch self {
        case .problem(let problem): "problem \(problem)"
        case .notSignedIn: "not signed in"
        case .sessionEnded: "the session ended"
        case .sessionChanged: "another user signed in"
        case .unexpectedResponse(let status): "unexpected response \(status)"
        }
    }
}
