/// A PostgreSQL type OID, as sent with bind parameters so the server never has to guess.
public struct PostgresDataType: Sendable, Hashable, CustomStringConvertible {
    public let oid: UInt32

    public init(oid: UInt32) { self.oid = oid }

    public static let bool = PostgresDataType(oid: 16)
    public static let bytea = PostgresDataType(oid: 17)
    public static let int8 = PostgresDataType(oid: 20)
    public static let int4 = PostgresDataType(oid: 23)
    public static let text = PostgresDataType(oid: 25)
    public static let json = PostgresDataType(oid: 114)
    public static let float8 = PostgresDataType(oid: 701)
    public static let textArray = PostgresDataType(oid: 1009)
    public static let timestamptz = PostgresDataType(oid: 1184)
    public static let timestamptzArray = PostgresDataType(oid: 1185)
    public static let interval = PostgresDataType(oid: 1186)
    public static let uuid = PostgresDataType(oid: 2950)
    public static let uuidArray = PostgresDataType(oid: 2951)
    public static let jsonb = PostgresDataType(oid: 3802)
    /// Lets the server infer the type from context.
    public static let unspecified = PostgresDataType(oid: 0)

    public var description: String { "oid \(oid)" }
}
