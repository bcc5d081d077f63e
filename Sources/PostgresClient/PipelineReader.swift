internal import CLibPQ

/// Reads one pipeline's answers in order, one `PGresult` at a time, as
/// `PostgresIODriver` gets them whenever the socket has data.
///
/// The server answers each command with its results then a NULL, and the whole
/// pipeline with PGRES_PIPELINE_SYNC. After an error, the remaining commands answer
/// PGRES_PIPELINE_ABORTED.
struct PipelineReader {
    /// What the pipeline owes us, in the order the server answers.
    enum Expected {
        case preparation(LibPQConnection.StatementKey, name: String)
        case statement(index: Int)
        /// A statement the connection adds for itself (`LibPQConnection.timeoutStatement`); its rows are dropped.
        case setting
    }

    private let expected: [Expected]
    private var position = 0
    private var current: Result<PostgresRows, PostgresError>?
    private var strayNulls = 0
    private(set) var results: [PostgresRows?]
    private(set) var firstError: PostgresError?
    /// Statements that this pipeline prepared successfully.
    private(set) var prepared: [(LibPQConnection.StatementKey, String)] = []

    init(expected: [Expected], statementCount: Int, sendFailure: PostgresError?) {
        self.expected = expected
        self.results = Array(repeating: nil, count: statementCount)
        self.firstError = sendFailure
    }

    /// Takes ownership of `result`; returns true once the pipeline's sync has arrived.
    mutating func accept(_ result: OpaquePointer?, from connection: LibPQConnection) throws -> Bool {
        guard let result else {
            if connection.isBroken { throw connection.connectionError("the connection closed during the pipeline") }
            if position < expected.count {
                finishCommand(connection)
            } else {
                strayNulls += 1
                if strayNulls > 4 { throw PostgresError(kind: .protocolViolation, message: "the pipeline did not end with a sync") }
            }
            return false
        }
        let status = PQresultStatus(result)
        if status == PGRES_PIPELINE_SYNC {
            PQclear(result)
            guard position == expected.count else {
                throw PostgresError(kind: .protocolViolation, message: "the pipeline ended before every statement was answered")
            }
            return true
        }
        guard position < expected.count else {
            // Nothing is owed any more (a late error after the last command): keep the first error.
            if status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK && firstError == nil {
                firstError = LibPQConnection.error(from: result, connection: connection.handleForErrors)
            }
            PQclear(result)
            return false
        }
        switch status {
        case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
            if current == nil { current = .success(PostgresRows(taking: result)) } else { PQclear(result) }
        case PGRES_PIPELINE_ABORTED:
            PQclear(result)
            if current == nil { current = .failure(PostgresError(kind: .other, message: "skipped: an earlier statement in the pipeline failed")) }
        default:
            let error = LibPQConnection.error(from: result, connection: connection.handleForErrors)
            PQclear(result)
            if case .failure = current {} else { current = .failure(error) }
        }
        return false
    }

    private mutating func finishCommand(_ connection: LibPQConnection) {
        let outcome = current ?? .failure(connection.connectionError("the connection closed before the statement was answered"))
        switch (expected[position], outcome) {
        case (.preparation(let key, let name), .success):
            prepared.append((key, name))
        case (.statement(let index), .success(let rows)):
            results[index] = rows
        case (.setting, .success):
            break
        case (_, .failure(let error)):
            if firstError == nil { firstError = error }
        }
        current = nil
        position += 1
    }
}
