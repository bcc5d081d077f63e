import DiaryCore
import Foundation
import Hummingbird
import PostgresClient

/// Limits on every input, each failure a 400 `validation_failed` naming the field.
enum Validation {
    /// The value trimmed, if it fits `limit`. Routes name a `TextLimit` rather than a range, so
    /// each limit is written once and the tests can hold its other copies to it.
    static func text(_ value: String, field: String, limit: TextLimit) throws -> String {
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        // Counted as a person counts: user-perceived characters (extended grapheme clusters),
        // as Swift's String.count does on the phone. "👨‍👩‍👧" is one, so is "é" however encoded.
        let length = limit.characters
        guard length.contains(trimmed.count) else {
            throw Problem.validation(field: field, "must be \(length.lowerBound) to \(length.upperBound) characters")
        }
        // The database's backstop (TextLimit.maximumCodePoints), said here as a 400.
        guard trimmed.unicodeScalars.count <= limit.maximumCodePoints else {
            throw Problem.validation(field: field, "has characters too long to store (over \(TextLimit.codePointsPerCharacter) code points each)")
        }
        guard !trimmed.unicodeScalars.contains(where: { $0.value == 0 }) else {
            throw Problem.validation(field: field, "must not contain NUL characters")
        }
        return trimmed
    }

    static func optionalText(_ value: String?, field: String, limit: TextLimit) throws -> String? {
        try value.map { try text($0, field: field, limit: limit) }
    }

    /// A name shown to others: no control characters (C0, C1) and no bidirectional overrides
    /// or isolates, which could make a name read as something else.
    static func displayName(_ value: String, field: String = "displayName") throws -> String {
        let name = try text(value, field: field, limit: .displayName)
        if let bad = name.unicodeScalars.first(where: Self.isForbiddenInNames) {
            throw Problem.validation(field: field, "must not contain control or text-direction characters (U+\(String(bad.value, radix: 16, uppercase: true)))")
        }
        return name
    }

    static func isForbiddenInNames(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// A profile photo is uploaded (`PUT /v1/me/photo`) and its URL minted by the server: a
    /// URL a user gave would be loaded by every co-member's app, telling its server when and
    /// from where they open the diary.
    static func noProfileImageURL(_ value: String?) throws {
        guard value == nil else {
            throw Problem.validation(field: "profileImageUrl", "cannot be set: upload the photo with PUT /v1/me/photo, and the server gives its URL")
        }
    }

    static func timeZone(_ value: String?) throws -> String? {
        guard let value else { return nil }
        guard value.count <= 64, value.contains("/") || value == "UTC", TimeZone(identifier: value) != nil else {
            throw Problem.validation(field: "timeZone", "must be an IANA time zone name such as Asia/Tokyo")
        }
        return value
    }

    static func reminderTime(_ value: String?) throws -> String? {
        guard let value else { return nil }
        guard value.wholeMatch(of: /([01][0-9]|2[0-3]):[0-5][0-9]/) != nil else {
            throw Problem.validation(field: "settings.reminderTime", "must be HH:MM")
        }
        return value
    }

    /// A path id that is not a UUID names nothing that exists: 404, as for any unknown row.
    static func id(_ context: some RequestContext, _ name: String) throws -> UUID {
        guard let text = context.parameters.get(name), let id = UUID(canonicalText: text) else {
            throw Problem.notFound("no such resource")
        }
        return id
    }
}
