extension MigrationFile {
    /// The migrations' folder: the flag, DIARY_MIGRATIONS_DIR, else sql/migrations.
    static func directory(flag: String?, in environment: [String: String] = Setting.environment) -> String {
        Setting.string(flag: flag, environment: "DIARY_MIGRATIONS_DIR", default: "sql/migrations", in: environment)!
    }
}
