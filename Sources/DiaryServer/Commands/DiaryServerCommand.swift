import ArgumentParser

@main
struct DiaryServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diary-server",
        abstract: "The Zutto Nikki (ずっと日記) backend: a JSON API over PostgreSQL.",
        subcommands: [
            ServeCommand.self, MigrateCommand.self, CheckCountersCommand.self, BackupCommand.self, VerifyBackupCommand.self, NoticeCommand.self,
            PhotosCommand.self, RebalanceCommand.self, RestorePointCommand.self,
        ],
        defaultSubcommand: ServeCommand.self
    )
}
