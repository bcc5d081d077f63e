import Foundation
import HummingbirdCore
@testable import DiaryCore
@testable import DiaryHTTP

extension FuzzTarget {
    /// A text frame on the realtime socket: a renewal exactly when the reference, reading the
    /// same JSON, finds `"type": "auth"` with a string or no `accessToken`; anything else is
    /// ignored, never a trap.
    static func checkClientMessage(_ bytes: [UInt8]) throws(PropertyViolation) {
        let text = String(decoding: bytes, as: UTF8.self)
        let renewal = RealtimeSocket.AuthMessage.renewal(in: text)
        let data = Data(text.utf8)
        // JSONSerialization and JSONDecoder may keep different copies of a repeated key.
        guard JSONDuplicateKeys.first(in: data) == nil, let parsed = try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed) else { return }
        let object = parsed as? [String: Any]
        let token = object?["accessToken"]
        let tokenReads = token == nil || token is NSNull || token is String
        let expected = object?["type"] as? String == "auth" && tokenReads
        try require((renewal != nil) == expected, "the frame \(text.debugDescription) is \(renewal == nil ? "ignored" : "read as a renewal")")
        if let renewal {
            try require(renewal.accessToken == token as? String, "the renewal's token is not the frame's")
        }
    }

    /// A request's query string, as Hummingbird splits and unescapes it, through each
    /// parameter reader of the routes (`limit`, `before`, `since`, `month`): every value is
    /// accepted with a value that reads back from its own spelling, or refused (400, 410).
    /// The parameters, their values escaped again, split into the same names and values. The query is
    /// what a request line carries: visible ASCII, as RFC 9112 has it (the rest comes percent-encoded).
    static func checkQuery(_ bytes: [UInt8]) throws(PropertyViolation) {
        let query = String(decoding: bytes.filter { (0x21...0x7E).contains($0) }, as: UTF8.self)
        let parameters = URI("/v1/diaries/d/entries?" + query).queryParameters
        var pairs: [(String, String)] = []
        for (name, value) in parameters {
            let value = String(value)
            pairs.append((String(name), value))
            if let limit = Int(value) {
                try require(Int(String(limit)) == limit, "the limit \(value) does not read back")
            }
            if let month = DiaryCalendarRepository.Month(value) {
                try require(month.text == value && DiaryCalendarRepository.Month(month.text) == month, "the month \(value) reads as \(month.text)")
            }
            try require(ChangeCursor.isWellFormed(value) || ChangeCursor(value) == nil, "since=\(value) is not well formed, yet a cursor")
            try checkCursorText(value)
        }
        // Hummingbird percent-decodes values, not names, so only the values are escaped again.
        let escaped = pairs.map { "\($0.0)=\(escape($0.1))" }.joined(separator: "&")
        let again = URI("/v1/diaries/d/entries?" + escaped).queryParameters.map { (String($0.key), String($0.value)) }
        try require(again.elementsEqual(pairs, by: { $0 == $1 }), "the query \(query.debugDescription) reads as \(pairs), escaped again as \(escaped) as \(again)")
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters.
    static func escape(_ text: String) -> String {
        text.utf8.map { byte in
            let unreserved = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || Array("-._~".utf8).contains(byte)
            return unreserved ? String(UnicodeScalar(byte)) : "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }.joined()
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
