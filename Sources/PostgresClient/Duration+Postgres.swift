public import Foundation

/// A span bound to a statement as an interval, to the microsecond (PostgreSQL's
/// resolution): `claim(\(options.lease))` rather than seconds spelled into SQL.
extension Duration: PostgresEncodable {
    public static var postgresType: PostgresDataType { .interval }
    public var postgresText: String { "\(microseconds) microseconds" }
}

/// A span's size in the units that C calls, metrics and PostgreSQL settings take, rounded
/// toward zero: the one place a Duration is taken apart.
extension Duration {
    public var wholeSeconds: Int64 {
        components.seconds
    }

    public var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }

    public var microseconds: Int64 {
        components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
    }

    public var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }

    /// Seconds with their fraction, as metrics and logs show them.
    public var totalSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
