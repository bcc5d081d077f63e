import CLibPQ
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libpq connection, always in pipeline mode, driven with blocking calls.
///
/// Every method blocks, so it is called only from the pool's own threads, never
/// from an event loop. The pool leases a connection to one task at a time, and
/// that task runs at most one job on it at once, which is the invariant that makes
/// the unchecked `Sendable` conformance sound.
final class LibPQConnection: @unchecked Sendable {
    private var handle: OpaquePointer
    private let configuration: PostgresConfiguration
    /// Statement text and parameter types → the name it was prepared under on this connection.
    private var preparedStatements: [StatementKey: String] = [:]
    private var nextStatementNumber = 0
    /// A bound on server memory: past it, statements run unnamed instead of being prepared.
    static let maxPreparedStatements = 256

    private struct StatementKey: Hashable {
        var sql: String
        var types: [PostgresDataType]
    }

    /// What the pipeline owes us, in the order the server answers.
    private enum Expected {
        case preparation(StatementKey, name: String)
        case statement(index: Int)
    }

    private init(handle: OpaquePointer, configuration: PostgresConfiguration) {
        self.handle = handle
        self.configuration = configuration
    }

    deinit {
        PQfinish(handle)
    }

    static func connect(_ configuration: PostgresConfiguration) throws -> LibPQConnection {
        let handle = try openHandle(configuration)
        return LibPQConnection(handle: handle, configuration: configuration)
    }

    private static func openHandle(_ configuration: PostgresConfiguration) throws -> OpaquePointer {
        let pairs = configuration.keywords
        let handle: OpaquePointer? = withCStringArray(pairs.map(\.0) + [nil]) { keywords in
            withCStringArray(pairs.map(\.1) + [nil]) { values in
                PQconnectdbParams(keywords, values, 0)
            }
        }
        guard let handle else {
            throw PostgresError(kind: .connectionFailure, message: "libpq could not allocate a connection")
        }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = errorMessage(handle)
            PQfinish(handle)
            throw PostgresError(kind: .connectionFailure, message: "cannot connect to \(configuration): \(message)")
        }
        // Notices and the server's parting FATAL go to logs via errors, not to stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        guard PQenterPipelineMode(handle) == 1 else {
            let message = errorMessage(handle)
            PQfinish(handle)
            throw PostgresError(kind: .protocolViolation, message: "cannot enter pipeline mode: \(message)")
        }
        return handle
    }

    var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

    var isIdle: Bool { PQtransactionStatus(handle) == PQTRANS_IDLE }

    var socket: Int32 { PQsocket(handle) }

    /// Called before a leased connection's first job. An idle connection has nothing to
    /// read, so readable data means the server hung up (a restart, `pg_terminate_backend`)
    /// or sent something we must consume; either way we learn it before sending work.
    func reconnectIfBroken() throws {
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        // The server's last words (57P01 "terminating connection") can arrive before the
        // hang-up itself, leaving libpq's status OK for a moment; any input at all on an
        // idle connection therefore condemns it. A needless reconnect is the worst case.
        let unsolicitedInput = !isBroken && poll(&descriptor, 1, 0) > 0
        guard isBroken || unsolicitedInput else { return }
        let fresh = try Self.openHandle(configuration)
        PQfinish(handle)
        handle = fresh
        preparedStatements.removeAll()
    }

    /// Sends the statements as one pipeline, followed by a single sync, and reads every answer:
    /// one network round trip. Throws the first error; the statements after it did not run.
    func run(_ statements: [PostgresQuery]) throws -> [PostgresRows] {
        var expected: [Expected] = []
        expected.reserveCapacity(statements.count + 1)
        var sendFailure: PostgresError?
        for (index, statement) in statements.enumerated() {
            do {
                try send(statement, index: index, expected: &expected)
            } catch let error as PostgresError {
                sendFailure = error
                break
            }
        }
        guard PQpipelineSync(handle) == 1 else {
            throw connectionError("could not send the pipeline")
        }
        var results = [PostgresRows?](repeating: nil, count: statements.count)
        var firstError: PostgresError? = sendFailure
        for expectation in expected {
            let outcome = try readOne()
            switch (expectation, outcome) {
            case (.preparation(let key, let name), .success):
                preparedStatements[key] = name
            case (.statement(let index), .success(let rows)):
                results[index] = rows
            case (_, .failure(let error)):
                if firstError == nil { firstError = error }
            }
        }
        try readSync()
        if let firstError { throw firstError }
        return results.map { $0 ?? PostgresRows() }
    }

    /// Runs a multi-statement script with the simple query protocol, which pipeline
    /// mode does not allow, so the connection leaves pipeline mode for the call.
    func runScript(_ script: String) throws {
        guard PQexitPipelineMode(handle) == 1 else {
            throw PostgresError(kind: .protocolViolation, message: "cannot leave pipeline mode: \(Self.errorMessage(handle))")
        }
        defer { _ = PQenterPipelineMode(handle) }
        guard let result = PQexec(handle, script) else { throw connectionError("could not run the script") }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            var error = Self.error(from: result, connection: handle)
            if let position = PQresultErrorField(result, Int32(Character("P").asciiValue!)), let offset = Int(String(cString: position)) {
                error.position = offset
            }
            throw error
        }
    }

    private func send(_ statement: PostgresQuery, index: Int, expected: inout [Expected]) throws {
        let bindings = statement.bindings
        for value in bindings.values where value?.utf8.contains(0) == true {
            throw PostgresError(kind: .invalidInput, sqlState: SQLState("22021"), message: "a text value contains a NUL character")
        }
        let key = StatementKey(sql: statement.sql, types: bindings.types)
        let oids = bindings.types.map { Oid($0.oid) }
        var name = preparedStatements[key]
        if name == nil, preparedStatements.count < Self.maxPreparedStatements {
            let newName = "s\(nextStatementNumber)"
            nextStatementNumber += 1
            guard PQsendPrepare(handle, newName, statement.sql, Int32(oids.count), oids) == 1 else {
                throw connectionError("could not send a statement")
            }
            expected.append(.preparation(key, name: newName))
            name = newName
        }
        let sent: Int32 = withCStringArray(bindings.values) { values in
            if let name {
                return PQsendQueryPrepared(handle, name, Int32(values.count), values, nil, nil, 0)
            }
            return PQsendQueryParams(handle, statement.sql, Int32(values.count), oids, values, nil, nil, 0)
        }
        guard sent == 1 else { throw connectionError("could not send a statement") }
        expected.append(.statement(index: index))
    }

    /// Reads the results of one pipelined command, up to the NULL that ends it.
    private func readOne() throws -> Result<PostgresRows, PostgresError> {
        var outcome: Result<PostgresRows, PostgresError>?
        while let result = PQgetResult(handle) {
            switch PQresultStatus(result) {
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                if outcome == nil { outcome = .success(PostgresRows(taking: result)) } else { PQclear(result) }
            case PGRES_PIPELINE_ABORTED:
                PQclear(result)
                outcome = outcome ?? .failure(PostgresError(kind: .other, message: "skipped: an earlier statement in the pipeline failed"))
            case PGRES_PIPELINE_SYNC:
                PQclear(result)
                throw PostgresError(kind: .protocolViolation, message: "the pipeline ended before every statement was answered")
            default:
                let error = Self.error(from: result, connection: handle)
                PQclear(result)
                if case .failure = outcome {} else { outcome = .failure(error) }
            }
            if isBroken { break }
        }
        if let outcome { return outcome }
        throw connectionError("the connection closed before the statement was answered")
    }

    private func readSync() throws {
        // A stray NULL may precede the sync; anything else past a few reads means the stream is lost.
        for _ in 0..<4 {
            guard let result = PQgetResult(handle) else {
                if isBroken { throw connectionError("the connection closed during the pipeline") }
                continue
            }
            let status = PQresultStatus(result)
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { return }
        }
        throw PostgresError(kind: .protocolViolation, message: "the pipeline did not end with a sync")
    }

    private func connectionError(_ context: String) -> PostgresError {
        PostgresError(kind: .connectionFailure, sqlState: SQLState("08006"), message: "\(context): \(Self.errorMessage(handle))")
    }

    static func error(from result: OpaquePointer, connection: OpaquePointer) -> PostgresError {
        func field(_ code: Character) -> String? {
            guard let value = PQresultErrorField(result, Int32(code.asciiValue!)) else { return nil }
            return String(cString: value)
        }
        let state = field("C").map(SQLState.init)
        let message = field("M") ?? errorMessage(connection)
        var kind = state?.kind ?? .connectionFailure
        if PQstatus(connection) != CONNECTION_OK { kind = .connectionFailure }
        return PostgresError(kind: kind, sqlState: state, message: message, detail: field("D"), hint: field("H"), constraint: field("n"))
    }

    static func errorMessage(_ handle: OpaquePointer) -> String {
        guard let text = PQerrorMessage(handle) else { return "unknown libpq error" }
        return String(cString: text).trimmingCharacters(in: [" ", "\n"])
    }
}

/// Lends `body` an array of C strings (NULL for nil) that live for the duration of the call.
func withCStringArray<Result>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) throws -> Result) rethrows -> Result {
    let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { $0.flatMap { strdup($0) } }
    defer { pointers.forEach { free($0) } }
    return try body(pointers.map { $0.map { UnsafePointer($0) } })
}

private extension String {
    func trimmingCharacters(in set: Set<Character>) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}
