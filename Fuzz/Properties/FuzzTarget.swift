import DiaryCore

/// A parser of bytes that strangers send, and the properties its fuzzing checks beyond "no
/// crash" (the README, "Fuzzing and sanitizers"). `make fuzz` runs each case's libFuzzer entry point
/// (Fuzz/Targets/<name>); `FuzzCorpusReplayTests` replays each committed corpus through `check`.
package enum FuzzTarget: String, CaseIterable, Sendable {
    case jpeg, png, webp, json, cursor, headers, revenuecat, apple, zip, websocket, query

    /// Runs `bytes` through the parser; throws when a property does not hold. A crash in the
    /// parser itself is a crash here too.
    package func check(_ bytes: [UInt8]) throws(PropertyViolation) {
        switch self {
        case .jpeg: try Self.checkImage(bytes, declaredAs: .jpeg)
        case .png: try Self.checkImage(bytes, declaredAs: .png)
        case .webp: try Self.checkImage(bytes, declaredAs: .webp)
        case .json: try Self.checkJSONBody(bytes)
        case .cursor: try Self.checkCursors(bytes)
        case .headers: try Self.checkHeader(bytes)
        case .revenuecat: try Self.checkRevenueCatEvent(bytes)
        case .apple: try Self.checkAppleNotification(bytes)
        case .zip: try Self.checkZipArchive(bytes)
        case .websocket: try Self.checkClientMessage(bytes)
        case .query: try Self.checkQuery(bytes)
        }
    }

    /// The body of each libFuzzer entry point: a property that fails traps, so that libFuzzer
    /// keeps the input as a finding.
    package func fuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) {
        let bytes = start.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
        do {
            try check(bytes)
        } catch {
            fatalError("fuzz-\(rawValue): \(error.message)")
        }
    }
}
