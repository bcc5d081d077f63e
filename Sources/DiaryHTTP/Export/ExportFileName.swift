import Foundation

/// `Content-Disposition` for an export: a name every file system accepts, with the diary's
/// own text kept for browsers that read RFC 6266's `filename*` (all current ones), and a
/// plain ASCII `filename` for the rest.
enum ExportFileName {
    /// Characters that Windows, macOS or Linux refuse in a file name, or that mean a path.
    private static let refused = Set("/\\:*?\"<>|")
    static let maximumNameCharacters = 80

    /// `day` is YYYYMMDD in the requester's zone.
    static func contentDisposition(name: String, day: String) -> String {
        let stem = safeStem(name)
        let full = "\(stem)-\(day).zip"
        let asciiStem = stem.unicodeScalars.allSatisfy { $0.isASCII } ? stem : "diary"
        let encoded = full.addingPercentEncoding(withAllowedCharacters: rfc5987Allowed) ?? "diary-\(day).zip"
        return #"attachment; filename="\#(asciiStem)-\#(day).zip"; filename*=UTF-8''\#(encoded)"#
    }

    /// The name without characters file systems refuse, control characters, or leading and
    /// trailing dots and spaces (Windows drops them); "diary" if nothing is left.
    static func safeStem(_ name: String) -> String {
        var kept = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            if scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format { continue }
            kept.append(refused.contains(Character(scalar)) ? "_" : scalar)
        }
        let trimmed = String(String(kept).prefix(maximumNameCharacters)).trimmingCharacters(in: CharacterSet(charactersIn: ". ").union(.whitespacesAndNewlines))
        return trimmed.isEmpty ? "diary" : trimmed
    }

    /// RFC 5987's attr-char.
    private static let rfc5987Allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$&+-.^_`|~")
}
