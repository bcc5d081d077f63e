/// Why an S3 request did not do what it was asked, with what a log needs: the operation, the
/// key, and the service's own answer.
public enum S3Error: Error, Equatable, CustomStringConvertible {
    /// 404 `NoSuchKey` (or `NoSuchBucket`): nothing is there.
    case notFound(operation: String, key: String)
    /// Any other non-2xx answer: 403 (credentials, clock skew), 5xx, 503 SlowDown.
    case refused(operation: String, key: String, status: Int, code: String?)
    /// No answer: refused connection, TLS, timeout, a body cut short.
    case unreachable(operation: String, key: String, reason: String)
    /// A 2xx answer whose body is not what S3 sends.
    case malformed(operation: String, reason: String)

    public var description: String {
        switch self {
        case .notFound(let operation, let key): "S3 \(operation) \(key): not found"
        case .refused(let operation, let key, let status, let code): "S3 \(operation) \(key): \(status)\(code.map { " \($0)" } ?? "")"
        case .unreachable(let operation, let key, let reason): "S3 \(operation) \(key): unreachable: \(reason)"
        case .malformed(let operation, let reason): "S3 \(operation): malformed answer: \(reason)"
        }
    }
}
