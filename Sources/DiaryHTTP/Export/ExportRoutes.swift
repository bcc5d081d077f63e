import DiaryCore
import DiaryModels
import Foundation
import Hummingbird
import Logging
import Metrics
import PostgresClient

/// The Data Safety Center's routes: a diary's export, the caller's own (APPI disclosure),
/// and the backups' state. Exports are free for every member and stream as they are built.
struct ExportRoutes {
    let store: any PhotoStore
    let configuration: ExportConfiguration
    /// The departures' window: what the personal export carries of diaries left, and what the
    /// Data Safety Center states.
    let closedDiaries: ClosedDiaryConfiguration
    let streaming: InFlightLimit

    init(store: any PhotoStore, configuration: ExportConfiguration, closedDiaries: ClosedDiaryConfiguration) {
        self.store = store
        self.configuration = configuration
        self.closedDiaries = closedDiaries
        self.streaming = InFlightLimit(limit: configuration.concurrentExports)
    }

    func register(on router: RouterGroup<AuthenticatedContext>) {
        router.get("diaries/:diaryId/export") { _, context -> Response in
            let diary = try Validation.id(context, "diaryId")
            let ticket = try enter(context)
            let (name, days) = try await DiaryExport.admit(scope: context.scope, diary: diary, exportsPerDay: configuration.exportsPerDay)
            let export = DiaryExport(scope: context.scope, store: store, diaryID: diary, days: days, logger: context.logger)
            return stream(kind: "diary", name: name, days: days, ticket: ticket, context: context) { sink, now in
                try await export.write(exportedAt: now, to: sink)
            }
        }

        router.get("me/export") { _, context -> Response in
            let ticket = try enter(context)
            let days = try await PersonalExport.admit(scope: context.scope, exportsPerDay: configuration.exportsPerDay)
            let export = PersonalExport(scope: context.scope, store: store, departureWindow: closedDiaries.window, logger: context.logger)
            return stream(kind: "personal", name: "zutto-nikki-personal", days: days, ticket: ticket, context: context) { sink, now in
                try await export.write(exportedAt: now, to: sink)
            }
        }

        router.get("data-safety") { _, context -> DataSafety in
            try await DataSafetyRepository(scope: context.scope).status(
                backupsEnabled: configuration.backupsEnabled, departureWindow: closedDiaries.window, departureWindowDays: closedDiaries.windowDays)
        }
    }

    private func enter(_ context: AuthenticatedContext) throws -> InFlightLimit.Ticket {
        guard let ticket = streaming.ticket() else {
            context.logger.notice("export refused: the server is streaming its limit of exports", metadata: ["limit": "\(streaming.limit)"])
            throw Problem.serviceUnavailable("too many exports are running; retry in a minute", code: .overloaded, retryAfterSeconds: 60)
        }
        return ticket
    }

    /// The 200 and its headers go out first; an error after that can only cut the archive
    /// short, which every unzip reports, so it is logged here.
    private func stream(
        kind: String, name: String, days: LocalCalendar, ticket: InFlightLimit.Ticket, context: AuthenticatedContext,
        _ write: @escaping @Sendable (_ sink: (ByteBuffer) async throws -> Void, _ now: Date) async throws -> Void
    ) -> Response {
        let now = Date()
        let logger = context.logger
        let headers: HTTPFields = [
            .contentType: "application/zip",
            .contentDisposition: ExportFileName.contentDisposition(name: name, day: days.day(of: now, separator: "")),
            .cacheControl: "no-store",
        ]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let started = ContinuousClock.now
            var sent = 0
            do {
                try await write({ buffer in
                    sent += buffer.readableBytes
                    try await writer.write(buffer)
                }, now)
                try await writer.finish(nil)
            } catch {
                Counter(label: "exports_total", dimensions: [("kind", kind), ("result", "failed")]).increment()
                logger.error("export failed while streaming", metadata: ["kind": "\(kind)", "bytes_sent": "\(sent)", "error": "\(error)"])
                throw error
            }
            withExtendedLifetime(ticket) {}
            let elapsed = ContinuousClock.now - started
            Counter(label: "exports_total", dimensions: [("kind", kind), ("result", "ok")]).increment()
            Timer(label: "export_duration_seconds", dimensions: [("kind", kind)]).recordSeconds(elapsed.totalSeconds)
            logger.info("export sent", metadata: ["kind": "\(kind)", "bytes": "\(sent)", "seconds": "\(elapsed)"])
        })
    }
}
