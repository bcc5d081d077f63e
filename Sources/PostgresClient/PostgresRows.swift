internal import CLibPQ

/// The rows one statement returned.
///
/// Owns the libpq `PGresult` and frees it when the last reference goes. A
/// `PGresult` is never modified after libpq hands it over, so reading it from
/// several threads is safe; that is what makes the unchecked conformance sound.
public final class PostgresRows: @unchecked Sendable, RandomAccessCollection {
    private let result: OpaquePointer?
    public let count: Int
    public let columnNames: [String]
    /// The command tag's row count, as in `UPDATE 3`; 0 for statements that report none.
    public let affectedRows: Int

    init(taking result: OpaquePointer) {
        self.result = result
        self.count = Int(PQntuples(result))
        let columns = Int(PQnfields(result))
        self.columnNames = (0..<columns).map { String(cString: PQfname(result, Int32($0))) }
        self.affectedRows = Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    /// An empty set, for statements such as BEGIN whose result carries nothing.
    init() {
        self.result = nil
        self.count = 0
        self.columnNames = []
        self.affectedRows = 0
    }

    deinit {
        if let result { PQclear(result) }
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(position: Int) -> PostgresRow {
        precondition(position >= 0 && position < count, "row \(position) is out of range 0..<\(count)")
        return PostgresRow(rows: self, index: Int32(position))
    }

    public var first: PostgresRow? { count > 0 ? self[0] : nil }

    func columnIndex(_ name: String, from first: Int = 0) -> Int? {
        columnNames[first...].firstIndex(of: name)
    }

    /// The value's bytes in libpq's buffer, or nil for NULL. Valid while this object lives.
    func bytes(row: Int32, column: Int) -> UnsafeBufferPointer<UInt8>? {
        guard let result, PQgetisnull(result, row, Int32(column)) == 0, let value = PQgetvalue(result, row, Int32(column)) else { return nil }
        return UnsafeBufferPointer(start: UnsafeRawPointer(value).assumingMemoryBound(to: UInt8.self), count: Int(PQgetlength(result, row, Int32(column))))
    }
}

/// One row of a result, decoded a column at a time or all at once.
public struct PostgresRow: Sendable {
    let rows: PostgresRows
    let index: Int32
    /// Where lookups by name start: 0, or just after a section's marker.
    let firstColumn: Int

    init(rows: PostgresRows, index: Int32, firstColumn: Int = 0) {
        self.rows = rows
        self.index = index
        self.firstColumn = firstColumn
    }

    /// The columns after the one called `marker`, for lookups by name: a statement that
    /// joins several subjects into one row (an entry's columns, then a member's) marks where
    /// each begins, and each subject's decoder reads its own section by the names it knows.
    /// Positions (`decode(at:)`) stay those of the whole row.
    public func section(after marker: String) throws -> PostgresRow {
        guard let column = rows.columnIndex(marker, from: firstColumn) else {
            throw PostgresDecodingError(column: marker, targetType: "section", failure: .malformed("the result has no such column"))
        }
        return PostgresRow(rows: rows, index: index, firstColumn: column + 1)
    }

    public var columnCount: Int { rows.columnNames.count }

    /// Decodes the column at `column`; a mismatch names the column.
    public func decode<Value: PostgresDecodable>(_ type: Value.Type = Value.self, at column: Int) throws -> Value {
        guard column >= 0 && column < rows.columnNames.count else {
            throw PostgresDecodingError(column: "#\(column)", targetType: "\(Value.self)", failure: .malformed("the result has only \(rows.columnNames.count) column(s)"))
        }
        do {
            return try withExtendedLifetime(rows) {
                guard let bytes = rows.bytes(row: index, column: column) else { return try Value.decodeNull() }
                return try Value(postgresBytes: bytes)
            }
        } catch let failure as PostgresDecodingFailure {
            throw PostgresDecodingError(column: rows.columnNames[column], targetType: "\(Value.self)", failure: failure)
        }
    }

    /// Decodes the column called `name`: the first of that name, in the row or its section.
    public func decode<Value: PostgresDecodable>(_ name: String, as type: Value.Type = Value.self) throws -> Value {
        guard let column = rows.columnIndex(name, from: firstColumn) else {
            throw PostgresDecodingError(column: name, targetType: "\(Value.self)", failure: .malformed("the result has no such column"))
        }
        return try decode(Value.self, at: column)
    }

    /// Decodes the leading columns in order: `let (id, name) = try row.decode((UUID, String).self)`.
    public func decode<each Value: PostgresDecodable>(_ types: (repeat each Value).Type) throws -> (repeat each Value) {
        var column = 0
        func next<Next: PostgresDecodable>(_ type: Next.Type) throws -> Next {
            defer { column += 1 }
            return try decode(Next.self, at: column)
        }
        return (repeat try next((each Value).self))
    }
}
