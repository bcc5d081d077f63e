/// An app's version as the apps send it in `X-App-Version`: one to three whole numbers,
/// `major[.minor[.patch]]`, missing parts being 0.
package struct AppVersion: Comparable, Sendable, CustomStringConvertible {
    package var parts: [Int]

    package init?(_ text: some StringProtocol) {
        guard (1...32).contains(text.utf8.count) else { return nil }
        let pieces = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(pieces.count) else { return nil }
        var parts: [Int] = []
        for piece in pieces {
            guard (1...6).contains(piece.utf8.count), piece.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(piece) else { return nil }
            parts.append(value)
        }
        self.parts = parts + Array(repeating: 0, count: 3 - parts.count)
    }

    package var description: String { parts.map(String.init).joined(separator: ".") }

    package static func < (lhs: AppVersion, rhs: AppVersion) -> Bool { lhs.parts.lexicographicallyPrecedes(rhs.parts) }
}
