import Foundation

/// Reads Content-Type as routes compare it.
enum MediaType {
    /// `type/subtype` in lower case, parameters (`; charset=utf-8`) and spaces aside; "" when absent.
    static func essence(of header: String?) -> String {
        header?.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
    }
}
