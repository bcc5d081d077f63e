import Foundation

/// Where and how to connect, parsed from a `postgres://` URL into libpq keywords.
///
/// The URL is taken apart here and handed to `PQconnectdbParams` as keyword/value
/// pairs, so a password full of `@`, `/`, `'` or spaces needs only percent-encoding
/// in the URL and is never pasted into a conninfo string.
public struct PostgresConfiguration: Sendable, CustomStringConvertible {
    public var host: String?
    public var port: Int?
    public var user: String?
    public var password: String?
    public var database: String?
    /// Further libpq keywords from the URL's query, such as `sslmode` or `host` for a socket directory.
    public var parameters: [String: String]
    /// What requests' connections are named in pg_stat_activity; background workers name their own.
    public static let defaultApplicationName = "diary-server"
    public var applicationName: String = PostgresConfiguration.defaultApplicationName
    public var connectTimeoutSeconds: Int = 5
    /// The server cancels any statement that runs longer (SQLSTATE 57014); nil leaves the
    /// server's default. Set in every transaction, not at connect (see `LibPQConnection`).
    public var statementTimeout: Duration?
    /// Statements are prepared once per connection under a name and then only bound and
    /// run. False sends each one unnamed (parse, bind, run every time), which is what works
    /// behind a transaction pooler that does not track prepared statements (PgBouncer in
    /// transaction mode before 1.21): there the next transaction may run on a server
    /// connection where the name is unknown, or taken by another client's statement.
    public var preparedStatements = true

    /// libpq keywords that may appear in the URL's query. Anything else is refused by name.
    static let allowedParameters: Set<String> = [
        "host", "hostaddr", "port", "dbname", "user", "password", "sslmode", "sslrootcert", "sslcert", "sslkey",
        "application_name", "connect_timeout", "options", "target_session_attrs", "keepalives", "keepalives_idle",
    ]

    public init(host: String? = nil, port: Int? = nil, user: String? = nil, password: String? = nil, database: String? = nil, parameters: [String: String] = [:]) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.parameters = parameters
    }

    public init(url: String) throws {
        func invalid(_ reason: String) -> PostgresError {
            PostgresError(kind: .invalidConfiguration, message: "DATABASE_URL is invalid: \(reason)")
        }
        guard let components = URLComponents(string: url) else {
            throw invalid("it is not a URL (percent-encode reserved characters such as @ / : in the password)")
        }
        guard let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme.lowercased()) else {
            throw invalid("the scheme must be postgres:// or postgresql://")
        }
        self.init()
        if let host = components.percentEncodedHost, !host.isEmpty {
            self.host = host.removingPercentEncoding ?? host
        }
        if let port = components.port {
            guard (1...65535).contains(port) else { throw invalid("the port must be 1 to 65535") }
            self.port = port
        }
        if let user = components.percentEncodedUser, !user.isEmpty {
            guard let decoded = user.removingPercentEncoding else { throw invalid("the user name is not valid percent-encoding") }
            self.user = decoded
        }
        if let password = components.percentEncodedPassword {
            guard let decoded = password.removingPercentEncoding else { throw invalid("the password is not valid percent-encoding") }
            self.password = decoded
        }
        let path = components.percentEncodedPath
        if path.count > 1 {
            guard let decoded = String(path.dropFirst()).removingPercentEncoding, !decoded.contains("/") else {
                throw invalid("the path must be a single database name")
            }
            self.database = decoded
        }
        for item in components.queryItems ?? [] {
            guard Self.allowedParameters.contains(item.name) else {
                throw invalid("unknown parameter \"\(item.name)\"")
            }
            guard let value = item.value else { throw invalid("parameter \"\(item.name)\" has no value") }
            switch item.name {
            case "host": self.host = value
            case "port":
                guard let port = Int(value), (1...65535).contains(port) else { throw invalid("the port must be 1 to 65535") }
                self.port = port
            case "user": self.user = value
            case "password": self.password = value
            case "dbname": self.database = value
            case "application_name": self.applicationName = value
            case "connect_timeout":
                guard let seconds = Int(value), seconds >= 0 else { throw invalid("connect_timeout must be a whole number of seconds") }
                self.connectTimeoutSeconds = seconds
            default: self.parameters[item.name] = value
            }
        }
    }

    /// The keyword/value pairs for `PQconnectdbParams`.
    var keywords: [(String, String)] {
        var pairs: [(String, String)] = []
        if let host { pairs.append(("host", host)) }
        if let port { pairs.append(("port", String(port))) }
        if let user { pairs.append(("user", user)) }
        if let password { pairs.append(("password", password)) }
        if let database { pairs.append(("dbname", database)) }
        pairs.append(("application_name", applicationName))
        pairs.append(("connect_timeout", String(connectTimeoutSeconds)))
        // A startup parameter PgBouncer passes on. Nothing goes in `options`, which it refuses
        // ("unsupported startup parameter"), unless the URL asks for it.
        pairs.append(("client_encoding", "UTF8"))
        for (key, value) in parameters.sorted(by: { $0.key < $1.key }) {
            pairs.append((key, value))
        }
        return pairs
    }

    /// The target without the password, for logs and error messages.
    public var description: String {
        var text = "postgres://"
        if let user { text += user + (password == nil ? "" : ":***") + "@" }
        text += host ?? "localhost"
        if let port { text += ":\(port)" }
        text += "/" + (database ?? "")
        return text
    }
}

