import Foundation

/// A position in the change log: (transaction id, sequence number), see migration 0008.
/// Clients see it as an opaque string; `ChangeCursor(text)` is nil for anything this
/// server could not have written.
package struct ChangeCursor: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var xact: UInt64
    package var seq: Int64

    package init(xact: UInt64, seq: Int64) {
        self.xact = xact
        self.seq = seq
    }

    /// Before every change that a transaction at or after `horizon` makes.
    package init(horizon: UInt64) {
        self.init(xact: horizon, seq: 0)
    }

    /// The longest text a cursor may be; longer input is refused before it is parsed.
    package static let maximumLength = 64

    /// Whether `text` could be a cursor at all (base64url, at most 64 characters): what is not
    /// is a malformed request (400), while a well-formed one we do not know, empty included,
    /// asks for a resync (410).
    package static func isWellFormed(_ text: some StringProtocol) -> Bool {
        text.utf8.count <= maximumLength && Base64URL.usesAlphabetOnly(text)
    }

    package init?(_ text: String) {
        guard text.utf8.count <= Self.maximumLength, let data = Base64URL.decode(text), let plain = String(data: data, encoding: .utf8) else { return nil }
        let parts = plain.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "c1", let xact = UInt64(parts[1]), let seq = Int64(parts[2]), seq >= 0 else { return nil }
        self.init(xact: xact, seq: seq)
    }

    package var encoded: String { Base64URL.encode(Data("c1.\(xact).\(seq)".utf8)) }
    package var description: String { "\(xact).\(seq)" }

    package static func < (lhs: ChangeCursor, rhs: ChangeCursor) -> Bool {
        (lhs.xact, lhs.seq) < (rhs.xact, rhs.seq)
    }
}
