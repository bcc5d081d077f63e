internal import CLibPQ
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libpq connection, always in non-blocking pipeline mode.
///
/// Sending and reading never block; `PostgresIODriver` waits for the socket. Only
/// connecting, reconnecting and `runScript` block, and they run on the pool's threads,
/// never on an event loop. The pool leases a connection to one task at a time, and
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

    struct StatementKey: Hashable {
        var sql: String
        var types: [PostgresDataType]
    }

    /// Sets `statement_timeout` for the transaction it runs in. It goes with every pipeline
    /// instead of once per session: behind a transaction pooler (PgBouncer) each transaction
    /// may run on another server connection, and startup options do not pass it at all.
    private let timeoutStatement: PostgresQuery?

    private init(handle: OpaquePointer, configuration: PostgresConfiguration) {
        self.handle = handle
        self.configuration = configuration
        self.timeoutStatement = configuration.statementTimeout.map { timeout in
            "select set_config('statement_timeout', \(String(max(1, timeout.milliseconds))), true)"
        }
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
        // Timestamps are read as the ISO style prints them (PostgresTimestamp), whatever the
        // time zone. The style is the server's or the role's: no startup option sets it.
        let dateStyle = PQparameterStatus(handle, "DateStyle").map { String(cString: $0) } ?? "unknown"
        guard dateStyle.hasPrefix("ISO") else {
            PQfinish(handle)
            throw PostgresError(
                kind: .invalidConfiguration,
                message: "\(configuration) has DateStyle \(dateStyle); the server reads ISO dates: alter role … set datestyle = 'ISO, YMD'"
            )
        }
        // Notices and the server's parting FATAL go to logs via errors, not to stderr.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        guard PQenterPipelineMode(handle) == 1, PQsetnonblocking(handle, 1) == 0 else {
            let message = errorMessage(handle)
            PQfinish(handle)
            throw PostgresError(kind: .protocolViolation, message: "cannot enter non-blocking pipeline mode: \(message)")
        }
        return handle
    }

    var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

    /// For reading error fields; never used to send.
    var handleForErrors: OpaquePointer { handle }

    var isIdle: Bool { PQtransactionStatus(handle) == PQTRANS_IDLE }

    var socket: Int32 { PQsocket(handle) }

    /// Set when a pipeline ended in a state we cannot vouch for (a read failed half-way),
    /// so the next lease reconnects instead of reading a stale answer. Locked: the driver's
    /// thread may condemn a connection that callers share.
    private let condemned = NIOLockedValueBox(false)

    func condemn() { condemned.withLockedValue { $0 = true } }

    var isCondemned: Bool { condemned.withLockedValue { $0 } }

    /// The I/O driver's record of this connection's socket; read and set under the driver's lock.
    var watch: PostgresIODriver.Watch?
    /// Which of the pool's I/O threads serves this connection; set once, when it opens.
    var driverIndex = 0
    /// Shared pipelines using the connection; changed only under the pool's lock.
    var sharers = 0

    /// Checked before a leased connection's first job, without blocking. An idle
    /// connection has nothing to read, so readable data means the server hung up (a
    /// restart, `pg_terminate_backend`) or sent something we must consume. The socket
    /// is only asked when the driver saw input arrive while the connection was idle.
    func needsReconnect(inputArrived: Bool) -> Bool {
        if isCondemned || isBroken { return true }
        guard inputArrived else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        // The server's last words (57P01 "terminating connection") can arrive before the
        // hang-up itself, leaving libpq's status OK for a moment; any input at all on an
        // idle connection therefore condemns it. A needless reconnect is the worst case.
        return poll(&descriptor, 1, 0) > 0
    }

    /// Replaces the server connection; blocks, so it runs on the pool's threads.
    func reconnect() throws {
        let fresh = try Self.openHandle(configuration)
        PQfinish(handle)
        handle = fresh
        preparedStatements.removeAll()
        condemned.withLockedValue { $0 = false }
    }

    /// Queues the statements and a sync in libpq's output buffer and tries to send them;
    /// the connection is non-blocking, so anything left over goes out with `flush()`.
    func startPipeline(_ statements: [PostgresQuery]) throws -> PipelineReader {
        var expected: [PipelineReader.Expected] = []
        expected.reserveCapacity(statements.count + 3)
        var sendFailure: PostgresError?
        // The timeout goes first, or just after a BEGIN; never before a COMMIT or ROLLBACK,
        // which must run even in a transaction that an error has aborted.
        var timeoutBefore: Int?
        if timeoutStatement != nil, let first = statements.first {
            timeoutBefore = first.beginsTransaction ? 1 : first.controlsTransaction ? nil : 0
        }
        for (index, statement) in statements.enumerated() {
            do {
                if index == timeoutBefore, let timeoutStatement {
                    try send(timeoutStatement, as: .setting, expected: &expected)
                }
                try send(statement, as: .statement(index: index), expected: &expected)
            } catch let error as PostgresError {
                sendFailure = error
                break
            }
        }
        guard PQpipelineSync(handle) == 1 else {
            throw connectionError("could not send the pipeline")
        }
        return PipelineReader(expected: expected, statementCount: statements.count, sendFailure: sendFailure)
    }

    /// Sends what libpq still holds; true when everything has gone out.
    func flush() throws -> Bool {
        switch PQflush(handle) {
        case 0: return true
        case 1: return false
        default: throw connectionError("could not send to the server")
        }
    }

    /// Whether the socket holds bytes (or an end of stream) libpq has not read yet.
    var hasUnreadBytes: Bool {
        var byte: UInt8 = 0
        let peeked = recv(PQsocket(handle), &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return peeked >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Reads what the socket has; false when the connection failed.
    func consumeInput() -> Bool { PQconsumeInput(handle) == 1 }

    /// True when `nextResult()` would have to wait for the server.
    var isBusy: Bool { PQisBusy(handle) == 1 }

    func nextResult() -> OpaquePointer? { PQgetResult(handle) }

    /// Applies what the pipeline learnt (statements now prepared) and returns its rows or its first error.
    func finish(_ reader: PipelineReader) throws -> [PostgresRows] {
        for (key, name) in reader.prepared { preparedStatements[key] = name }
        if let error = reader.firstError { throw error }
        return reader.results.map { $0 ?? PostgresRows() }
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

    private func send(_ statement: PostgresQuery, as answer: PipelineReader.Expected, expected: inout [PipelineReader.Expected]) throws {
        let bindings = statement.bindings
        for value in bindings.values where value?.utf8.contains(0) == true {
            throw PostgresError(kind: .invalidInput, sqlState: SQLState("22021"), message: "a text value contains a NUL character")
        }
        let key = StatementKey(sql: statement.sql, types: bindings.types)
        // Only preparing, or sending unprepared once the cache is full, needs the types.
        var oids: [Oid] { bindings.types.map { Oid($0.oid) } }
        var name = preparedStatements[key]
        if name == nil, configuration.preparedStatements, preparedStatements.count < Self.maxPreparedStatements {
            let newName = "s\(nextStatementNumber)"
            nextStatementNumber += 1
            guard PQsendPrepare(handle, newName, statement.sql, Int32(bindings.count), oids) == 1 else {
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
        expected.append(answer)
    }

    func connectionError(_ context: String) -> PostgresError {
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
/// The strings share one buffer: two allocations, however many there are.
func withCStringArray<Result>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) throws -> Result) rethrows -> Result {
    var buffer: [CChar] = []
    buffer.reserveCapacity(strings.reduce(0) { $0 + ($1?.utf8.count ?? 0) + 1 })
    var offsets: [Int?] = []
    offsets.reserveCapacity(strings.count)
    for string in strings {
        guard let string else {
            offsets.append(nil)
            continue
        }
        offsets.append(buffer.count)
        for byte in string.utf8 { buffer.append(CChar(bitPattern: byte)) }
        buffer.append(0)
    }
    return try buffer.withUnsafeBufferPointer { base in
        try body(offsets.map { offset in offset.map { base.baseAddress! + $0 } })
    }
}

private extension String {
    func trimmingCharacters(in set: Set<Character>) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}
