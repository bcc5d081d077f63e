/// A failure reported by PostgreSQL or by the client around it.
///
/// `description` is what logs see: the kind, SQLSTATE and constraint, never the
/// statement or its bind values. The server's `message` and `detail` can quote
/// bound data (`Key (email)=(…) already exists`), so they are kept as fields for
/// code that decides deliberately to show them, such as the migrator.
public struct PostgresError: Error, Sendable, CustomStringConvertible {
    public var kind: Kind
    public var sqlState: SQLState?
    public var message: String
    public var detail: String?
    public var hint: String?
    public var constraint: String?
    /// For a failed script: the 1-based character offset of the error in it.
    public var position: Int?

    public init(kind: Kind, sqlState: SQLState? = nil, message: String, detail: String? = nil, hint: String? = nil, constraint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.constraint = constraint
    }

    public var description: String {
        var text = "PostgresError(\(kind)"
        if let sqlState { text += ", sqlState: \(sqlState.code)" }
        if let constraint { text += ", constraint: \(constraint)" }
        return text + ")"
    }

    /// The kinds of failure the rest of the server acts on.
    public enum Kind: String, Sendable, Hashable {
        case uniqueViolation
        case foreignKeyViolation
        case checkViolation
        case notNullViolation
        case invalidInput
        case insufficientPrivilege
        case serializationFailure
        case deadlock
        case queryCanceled
        case lockNotAvailable
        case raisedByApplication
        /// The connection is gone; the statement may not have run.
        case connectionFailure
        /// No connection became free within the pool's acquisition timeout.
        case poolExhausted
        case poolClosed
        case invalidConfiguration
        case decoding
        case protocolViolation
        case other
    }
}

/// A five-character SQLSTATE code.
public struct SQLState: Sendable, Hashable, CustomStringConvertible {
    public let code: String

    public init(_ code: String) { self.code = code }

    /// The first two characters: "23" integrity, "08" connection, and so on.
    public var errorClass: String { String(code.prefix(2)) }

    public var description: String { code }

    public static let uniqueViolation = SQLState("23505")
    public static let foreignKeyViolation = SQLState("23503")
    public static let checkViolation = SQLState("23514")
    public static let notNullViolation = SQLState("23502")
    public static let invalidTextRepresentation = SQLState("22P02")
    public static let stringDataRightTruncation = SQLState("22001")
    public static let invalidDatetimeFormat = SQLState("22007")
    public static let datetimeFieldOverflow = SQLState("22008")
    public static let invalidParameterValue = SQLState("22023")
    public static let insufficientPrivilege = SQLState("42501")
    public static let serializationFailure = SQLState("40001")
    public static let deadlockDetected = SQLState("40P01")
    public static let queryCanceled = SQLState("57014")
    public static let lockNotAvailable = SQLState("55P03")
    public static let objectInUse = SQLState("55006")
    public static let adminShutdown = SQLState("57P01")
    public static let crashShutdown = SQLState("57P02")
    public static let cannotConnectNow = SQLState("57P03")
    public static let raiseException = SQLState("P0001")

    /// The one table from SQLSTATE to the kinds we act on. Codes in no row fall back on their class.
    static let kinds: [SQLState: PostgresError.Kind] = [
        .uniqueViolation: .uniqueViolation,
        .foreignKeyViolation: .foreignKeyViolation,
        .checkViolation: .checkViolation,
        .notNullViolation: .notNullViolation,
        .invalidTextRepresentation: .invalidInput,
        .stringDataRightTruncation: .invalidInput,
        .invalidDatetimeFormat: .invalidInput,
        .datetimeFieldOverflow: .invalidInput,
        .invalidParameterValue: .invalidInput,
        .insufficientPrivilege: .insufficientPrivilege,
        .serializationFailure: .serializationFailure,
        .deadlockDetected: .deadlock,
        .queryCanceled: .queryCanceled,
        .lockNotAvailable: .lockNotAvailable,
        .adminShutdown: .connectionFailure,
        .crashShutdown: .connectionFailure,
        .cannotConnectNow: .connectionFailure,
        .raiseException: .raisedByApplication,
    ]

    static let classKinds: [String: PostgresError.Kind] = [
        "08": .connectionFailure,
        "22": .invalidInput,
        "23": .checkViolation,
    ]

    public var kind: PostgresError.Kind {
        SQLState.kinds[self] ?? SQLState.classKinds[errorClass] ?? .other
    }
}

/// A column that could not be decoded into the requested Swift type.
public struct PostgresDecodingError: Error, Sendable, CustomStringConvertible {
    public var column: String
    public var targetType: String
    public var failure: PostgresDecodingFailure

    public init(column: String, targetType: String, failure: PostgresDecodingFailure) {
        self.column = column
        self.targetType = targetType
        self.failure = failure
    }

    public var description: String {
        switch failure {
        case .unexpectedNull:
            return "column \"\(column)\" is NULL, which \(targetType) cannot hold"
        case .malformed(let reason):
            return "column \"\(column)\" does not decode as \(targetType): \(reason)"
        }
    }
}
