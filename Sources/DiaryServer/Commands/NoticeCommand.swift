import ArgumentParser
import DiaryCore
import DiaryModels
import Foundation
import Logging

/// `diary-server notice add|list|remove`: the notices every app shows (GET /v1/service-status).
struct NoticeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notice",
        abstract: "Publish, list or remove the notices the apps show.",
        discussion: """
            Runs as the schema's owner (MIGRATION_DATABASE_URL, else DATABASE_URL). A shutdown
            notice needs --effective at least 183 days ahead: the six months' notice the app
            promises. The schema refuses a nearer date too.
            """,
        subcommands: [Add.self, List.self, Remove.self]
    )

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "add", abstract: "Publish a notice.")

        @OptionGroup var database: DatabaseOptions
        @Option(help: "info or shutdown.") var kind = ServiceNoticeKind.info.rawValue
        @Option(help: "1 to 200 characters.") var title: String
        @Option(help: "1 to 5000 characters.") var body: String
        @Option(help: "YYYY-MM-DD (UTC): the day a shutdown takes effect; required for shutdown.") var effective: String?

        func validate() throws {
            guard ServiceNoticeKind(rawValue: kind) != nil else { throw ValidationError("--kind must be info or shutdown") }
            guard (1...200).contains(title.count) else { throw ValidationError("--title must be 1 to 200 characters") }
            guard (1...5000).contains(body.count) else { throw ValidationError("--body must be 1 to 5000 characters") }
            if let effective, effective.wholeMatch(of: /[0-9]{4}-[0-9]{2}-[0-9]{2}/) == nil {
                throw ValidationError("--effective must be YYYY-MM-DD")
            }
            if kind == ServiceNoticeKind.shutdown.rawValue && effective == nil {
                throw ValidationError("a shutdown notice needs --effective, at least \(ServiceNoticeRepository.shutdownNoticeDays) days ahead")
            }
        }

        func run() async throws {
            let logger = AppLogger.make(label: "diary-server.notice")
            let outcome = try await database.withOwnerPool(command: "notice add", logger: logger) { pool in
                try await ServiceNoticeRepository(pool: pool).add(kind: ServiceNoticeKind(rawValue: kind) ?? .info, title: title, body: body, effectiveOn: effective)
            }
            switch outcome {
            case .added(let id):
                print(id.uuidString.lowercased())
            case .tooSoon(let earliest):
                print("refused: a shutdown is announced at least \(ServiceNoticeRepository.shutdownNoticeDays) days ahead; the earliest --effective today is \(earliest)")
                throw ExitCode.failure
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the notices, newest first.")

        @OptionGroup var database: DatabaseOptions

        func run() async throws {
            let logger = AppLogger.make(label: "diary-server.notice")
            let notices = try await database.withOwnerPool(command: "notice list", logger: logger) { pool in
                try await ServiceNoticeRepository(pool: pool).list(limit: 1000)
            }
            for notice in notices {
                let effective = notice.effectiveOn.map { " effective \($0)" } ?? ""
                print("\(notice.id.uuidString.lowercased())  \(notice.kind.rawValue)\(effective)  \(notice.title)")
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a notice.")

        @OptionGroup var database: DatabaseOptions
        @Argument(help: "The notice's id.") var id: String

        func run() async throws {
            guard let uuid = UUID(uuidString: id) else { throw ValidationError("not a notice id: \(id)") }
            let logger = AppLogger.make(label: "diary-server.notice")
            let removed = try await database.withOwnerPool(command: "notice remove", logger: logger) { pool in
                try await ServiceNoticeRepository(pool: pool).remove(uuid)
            }
            guard removed else {
                print("no notice has the id \(id)")
                throw ExitCode.failure
            }
            print("removed \(id)")
        }
    }
}
