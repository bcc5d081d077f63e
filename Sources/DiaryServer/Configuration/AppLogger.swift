import Logging

enum AppLogger {
    /// A logger at $LOG_LEVEL (default info), writing to standard error.
    static func make(label: String) -> Logger {
        var logger = Logger(label: label)
        let level = Setting.string(flag: nil, environment: "LOG_LEVEL").flatMap { Logger.Level(rawValue: $0.lowercased()) }
        logger.logLevel = level ?? .info
        return logger
    }
}
