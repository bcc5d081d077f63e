import Foundation
import Testing
@testable import DiaryCore
@testable import DiaryHTTP

/// Each text limit is written once, in `TextLimit`, and the routes check it from there. Two
/// copies remain because their readers cannot see Swift: the database's backstop CHECKs (ten
/// code points a character, as a CHECK cannot count characters) and openapi.yaml's lengths, for
/// generated clients. Both are read here as text, from sql/schema.sql and openapi.yaml (no
/// database), and a copy that disagrees with its limit fails.
@Suite("Text limits, written once")
struct TextLimitTests {
    /// Where a limit is repeated: the CHECKs that back it, the request fields ("Schema.property")
    /// that state it, and the key openapi.yaml states the maximum under.
    struct Copies {
        var checks: [String]
        var fields: [String]
        var maximumKey: String
    }

    /// An exhaustive switch, so a limit cannot be added without saying where it is repeated.
    static func copies(of limit: TextLimit) -> Copies {
        switch limit {
        case .diaryName:
            Copies(checks: ["diaries_name_check"], fields: ["CreateDiaryRequest.name", "UpdateDiaryRequest.name"], maximumKey: "x-maxCharacters")
        case .displayName:
            // A development sign-in's name is stored as both dev_name and display_name.
            Copies(
                checks: ["users_display_name_check", "users_dev_name_check"],
                fields: ["AppleSignInRequest.displayName", "DevSignInRequest.name", "UpdateMeRequest.displayName"],
                maximumKey: "x-maxCharacters")
        case .entryContent:
            Copies(checks: ["entries_content_check"], fields: ["CreateEntryRequest.content", "UpdateEntryRequest.content"], maximumKey: "x-maxCharacters")
        case .entryQuestion:
            Copies(checks: ["entries_question_check"], fields: ["CreateEntryRequest.question", "UpdateEntryRequest.question"], maximumKey: "x-maxCharacters")
        // Codes and tokens are not stored as sent, so no CHECK repeats them; they are ASCII, where
        // a character is a code point, so openapi.yaml states JSON Schema's own maxLength.
        case .inviteCode:
            Copies(checks: [], fields: ["JoinDiaryRequest.inviteCode"], maximumKey: "maxLength")
        case .identityToken:
            Copies(checks: [], fields: ["AppleSignInRequest.identityToken"], maximumKey: "maxLength")
        case .nonce:
            Copies(checks: [], fields: ["AppleSignInRequest.nonce"], maximumKey: "maxLength")
        case .authorizationCode:
            Copies(checks: [], fields: ["AppleSignInRequest.authorizationCode"], maximumKey: "maxLength")
        }
    }

    /// Length CHECKs that back no `TextLimit`, as the server does not write their columns
    /// through `Validation.text`: what Apple and RevenueCat send, the account's email, image URL
    /// and time zone (checked by their own rules), the seeded questions, and the service notices
    /// `diary-server notice` writes. Named, so that a new length CHECK is placed on one side.
    static let checksOfOtherRules: Set<String> = [
        "apple_notifications_jti_check", "apple_notifications_type_check", "apple_tokens_client_id_check",
        "billing_events_event_id_check", "billing_events_event_type_check", "users_apple_sub_check",
        "users_email_check", "users_profile_image_url_check", "users_time_zone_check", "questions_text_check",
        "service_notices_title_check", "service_notices_body_check",
    ]

    static func schema() throws -> String {
        try String(contentsOf: RefusalTableTests.root.appendingPathComponent("sql/schema.sql"), encoding: .utf8)
    }

    /// A CHECK on a column's length, as pg_dump prints it.
    struct LengthCheck: Equatable {
        var column: String
        var minimum: Int?
        var maximum: Int?
    }

    /// Every CHECK on a length (`char_length` or `length`, not `octet_length`) in `schema`, by
    /// constraint name, from the lines pg_dump prints: `CONSTRAINT <name> CHECK ((char_length(<column>) ...`.
    static func lengthChecks(in schema: String) -> [String: LengthCheck] {
        var checks: [String: LengthCheck] = [:]
        for line in schema.split(separator: "\n") {
            guard let constraint = line.firstMatch(of: #/CONSTRAINT (\w+) CHECK \(+(?:char_)?length\((\w+)\)/#) else { continue }
            var check = LengthCheck(column: String(constraint.2))
            for bound in line.matches(of: #/[ (](?:char_)?length\((\w+)\) (>=|<=) (\d+)/#) where bound.1 == constraint.2 {
                if bound.2 == ">=" { check.minimum = Int(bound.3) } else { check.maximum = Int(bound.3) }
            }
            checks[String(constraint.1)] = check
        }
        return checks
    }

    /// The lengths openapi.yaml states for `field` ("Schema.property" in components.schemas):
    /// minLength, maxLength and x-maxCharacters, by key; nil when there is no such property.
    static func statedLengths(of field: String, in document: String) -> [String: Int]? {
        let parts = field.split(separator: ".")
        guard parts.count == 2 else { return nil }
        let lines = document.split(separator: "\n")
        guard let header = lines.firstIndex(where: { $0 == "    \(parts[0]):" }) else { return nil }
        // A schema's lines are indented past its name; the next schema's name ends them.
        for line in lines[(header + 1)...].prefix(while: { $0.hasPrefix("     ") }) {
            guard let mapping = Self.mapping(of: parts[1], in: line) else { continue }
            var lengths: [String: Int] = [:]
            for match in mapping.matches(of: #/(minLength|maxLength|x-maxCharacters): (\d+)/#) {
                lengths[String(match.1)] = Int(match.2)
            }
            return lengths
        }
        return nil
    }

    /// What is between the braces after `property: {` on `line`, where the property's name
    /// stands alone (after a space or a brace, so `name` is not found in `displayName`). The
    /// request fields are written as flow mappings without braces inside.
    static func mapping(of property: Substring, in line: Substring) -> Substring? {
        var rest = line
        while let found = rest.range(of: "\(property): {") {
            let before = found.lowerBound == line.startIndex ? " " : line[line.index(before: found.lowerBound)]
            if before == " " || before == "{", let close = line[found.upperBound...].firstIndex(of: "}") {
                return line[found.upperBound..<close]
            }
            rest = line[found.upperBound...]
        }
        return nil
    }

    @Test("each CHECK backing a limit allows ten code points for each of its characters", arguments: TextLimit.allCases)
    func checksAgree(limit: TextLimit) throws {
        let checks = Self.lengthChecks(in: try Self.schema())
        for name in Self.copies(of: limit).checks {
            let check = try #require(checks[name], "sql/schema.sql has no length CHECK \(name)")
            let expected = limit.characters.upperBound * TextLimit.codePointsPerCharacter
            #expect(check.maximum == expected, "\(name) allows \(check.maximum.map(String.init) ?? "any number of") code points; \(limit) is \(limit.characters), so \(expected)")
            if let minimum = check.minimum {
                #expect(minimum == limit.characters.lowerBound, "\(name) asks for at least \(minimum) code points; \(limit) is \(limit.characters)")
            }
        }
    }

    @Test("openapi.yaml states each limit on every request field it applies to", arguments: TextLimit.allCases)
    func openAPIAgrees(limit: TextLimit) throws {
        let document = OpenAPIDocument.text(file: nil)
        let copies = Self.copies(of: limit)
        #expect(!copies.fields.isEmpty, "\(limit) applies to no request field")
        let otherKey = copies.maximumKey == "maxLength" ? "x-maxCharacters" : "maxLength"
        for field in copies.fields {
            let stated = try #require(Self.statedLengths(of: field, in: document), "openapi.yaml has no \(field)")
            #expect(stated["minLength"] == limit.characters.lowerBound, "\(field): minLength \(stated["minLength"].map(String.init) ?? "absent"); \(limit) is \(limit.characters)")
            #expect(stated[copies.maximumKey] == limit.characters.upperBound, "\(field): \(copies.maximumKey) \(stated[copies.maximumKey].map(String.init) ?? "absent"); \(limit) is \(limit.characters)")
            #expect(stated[otherKey] == nil, "\(field) states \(otherKey) beside \(copies.maximumKey)")
        }
    }

    @Test("every x-maxCharacters in openapi.yaml is a limit's, and every length CHECK in sql/schema.sql is placed")
    func noCopyUntied() throws {
        let document = OpenAPIDocument.text(file: nil)
        let stated = document.components(separatedBy: "x-maxCharacters:").count - 1
        let tied = TextLimit.allCases.map { Self.copies(of: $0) }.filter { $0.maximumKey == "x-maxCharacters" }.map(\.fields.count).reduce(0, +)
        #expect(stated == tied, "openapi.yaml states x-maxCharacters \(stated) times; TextLimitTests ties \(tied) fields to limits")

        let found = Set(Self.lengthChecks(in: try Self.schema()).keys)
        let backing = Set(TextLimit.allCases.flatMap { Self.copies(of: $0).checks })
        let unplaced = found.subtracting(backing).subtracting(Self.checksOfOtherRules)
        #expect(unplaced.isEmpty, "length CHECKs neither backing a TextLimit nor named in checksOfOtherRules: \(unplaced.sorted())")
        let gone = Self.checksOfOtherRules.union(backing).subtracting(found)
        #expect(gone.isEmpty, "named here but not in sql/schema.sql: \(gone.sorted())")
    }

    /// The parsers can find what they look for, so the tests above cannot pass on nothing.
    @Test("the CHECK and openapi.yaml readers find known lengths, and only those")
    func readersFindKnownLengths() throws {
        let sample = """
                CONSTRAINT t_name_check CHECK (((char_length(name) >= 1) AND (char_length(name) <= 70))),
                CONSTRAINT t_note_check CHECK ((char_length(note) <= 9)),
                CONSTRAINT t_body_check CHECK (((length(body) >= 2) AND (length(body) <= 30))),
                CONSTRAINT t_hash_check CHECK ((octet_length(hash) = 32)),
                CONSTRAINT t_type_check CHECK ((type = ANY (ARRAY['a'::text, 'b'::text])))
            """
        #expect(Self.lengthChecks(in: sample) == [
            "t_name_check": LengthCheck(column: "name", minimum: 1, maximum: 70),
            "t_note_check": LengthCheck(column: "note", maximum: 9),
            "t_body_check": LengthCheck(column: "body", minimum: 2, maximum: 30),
        ])
        let real = Self.lengthChecks(in: try Self.schema())
        let backing = TextLimit.allCases.flatMap { Self.copies(of: $0).checks }
        #expect(backing.count >= 5)
        for name in backing {
            #expect(real[name]?.maximum != nil, "\(name) is not read from sql/schema.sql")
        }
        #expect(real["diaries_name_check"]?.column == "name")
        #expect(real["entries_question_check"]?.minimum == nil)

        let document = """
                A:
                  type: object
                  properties: {name: {type: string, minLength: 1, x-maxCharacters: 5}}
                B:
                  properties:
                    displayName: {type: string, maxLength: 7}
                    name: {type: [string, 'null'], minLength: 2, maxLength: 9}
                C:
                  properties: {other: {type: string}}
            """
        #expect(Self.statedLengths(of: "A.name", in: document) == ["minLength": 1, "x-maxCharacters": 5])
        #expect(Self.statedLengths(of: "B.name", in: document) == ["minLength": 2, "maxLength": 9])
        #expect(Self.statedLengths(of: "A.displayName", in: document) == nil)
        #expect(Self.statedLengths(of: "C.name", in: document) == nil)
        #expect(Self.statedLengths(of: "CreateEntryRequest.content", in: OpenAPIDocument.text(file: nil))?["x-maxCharacters"] != nil)
    }
}
