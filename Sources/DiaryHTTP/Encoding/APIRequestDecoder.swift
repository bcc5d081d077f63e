import DiaryCore
import DiaryModels
import Foundation
import Hummingbird
import NIOFoundationEssentialsCompat
import PostgresClient

/// Decodes JSON bodies with errors that say where they failed, and refuses fields a
/// client may never set (`read_only_field`) instead of silently applying them.
struct APIRequestDecoder: RequestDecoder {
    /// Bodies past this are refused with 413 before they are decoded.
    static let maximumBytes = 64 * 1024

    /// Timestamps are RFC 3339 text, as responses write them.
    static let jsonDecoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = PostgresTimestamp.jsonDecodingStrategy
        return decoder
    }()

    /// Fields that belong to the server. A body naming one is refused whatever the route.
    static let readOnlyFields: Set<String> = [
        "author", "userId", "user_id", "role", "inviteCode", "invite_code", "inviteUrl", "isPremium", "premiumExpiresAt", "plan",
        "createdAt", "updatedAt", "joinedAt", "diaryId", "memberCount", "maxMembers", "isMine", "readBy",
        "appleSub", "email", "lastEntryAt", "unreadCount", "id", "type", "members",
    ]

    func decode<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext) async throws -> T {
        guard Self.isJSON(request.headers[.contentType]) else {
            throw Problem(.unsupportedMediaType, detail: "send the body as application/json")
        }
        return try Self.decode(type, from: Data(buffer: try await request.collectBody(upTo: context.maxUploadSize)))
    }

    /// Arrays and objects a body may nest: the API's bodies nest two or three deep, and a
    /// deeper one is refused (400 `validation_failed`) before a parser recurses into it.
    static let maximumNesting = 32

    /// A body's bytes as `T`, or the `Problem` (400) that says why not.
    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        guard JSONDuplicateKeys.nesting(of: data) <= maximumNesting else {
            throw Problem(.validationFailed, detail: "the body nests arrays and objects more than \(maximumNesting) deep")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw Problem(.validationFailed, detail: "the body is not valid JSON: \((error as NSError).userInfo[NSDebugDescriptionErrorKey] ?? "malformed")")
        }
        guard let fields = object as? [String: Any] else {
            throw Problem(.validationFailed, detail: "the body must be a JSON object")
        }
        if let repeated = JSONDuplicateKeys.first(in: data) {
            throw Problem.validation(field: repeated, "appears more than once in one object")
        }
        let allowed = (T.self as? AllowsServerFields.Type)?.allowedServerFields ?? []
        if let field = fields.keys.sorted().first(where: { Self.readOnlyFields.contains($0) && !allowed.contains($0) }) {
            throw Problem(.readOnlyField, detail: "\(field) is set by the server and cannot be sent")
        }
        do {
            return try Self.jsonDecoder.decode(T.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw Problem.validation(field: Self.path(context.codingPath + [key]), "is required")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw Problem.validation(field: Self.path(context.codingPath), "has the wrong type")
        } catch let DecodingError.dataCorrupted(context) {
            throw Problem.validation(field: Self.path(context.codingPath), Self.explain(context.debugDescription))
        }
    }

    /// The values each request enum takes, by type name, for the API's own words.
    static let enumValues: [String: [String]] = [
        "DiaryType": DiaryType.allCases.map(\.rawValue),
    ]

    /// A decoder's complaint about a value, said in the API's words rather than Swift's.
    static func explain(_ debugDescription: String) -> String {
        if let match = debugDescription.firstMatch(of: /Cannot initialize (\w+) from invalid/), let values = enumValues[String(match.1)] {
            return "must be one of \(values.joined(separator: ", "))"
        }
        if debugDescription.contains("UUID") { return "must be a UUID" }
        if debugDescription.localizedCaseInsensitiveContains("date") { return "must be an RFC 3339 time" }
        return "is not a valid value"
    }

    /// `application/json` or a `+json` type, with any parameters (`; charset=utf-8`).
    static func isJSON(_ contentType: String?) -> Bool {
        let type = MediaType.essence(of: contentType)
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
    }

    static func path(_ codingPath: [any CodingKey]) -> String {
        codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }
}

/// A request type that may carry some of the otherwise read-only field names.
protocol AllowsServerFields {
    static var allowedServerFields: Set<String> { get }
}

extension CreateEntryRequest: AllowsServerFields {
    /// Offline-first clients choose the entry's id.
    static var allowedServerFields: Set<String> { ["id"] }
}

extension CreateDiaryRequest: AllowsServerFields {
    /// Clients that retry choose the diary's id, as they do an entry's.
    static var allowedServerFields: Set<String> { ["id", "type"] }
}

extension JoinDiaryRequest: AllowsServerFields {
    static var allowedServerFields: Set<String> { ["inviteCode"] }
}
