import Foundation
import Testing

/// docs/ARCHITECTURE.md's claims about who builds what and which way calls go, checked in the
/// sources: one composition root, the refusal table's statuses, and a realtime wing whose
/// lower parts never call up.
@Suite("Composition and direction")
struct CompositionTests {
    /// Each Swift file of `target` with its text, by path under Sources/<target>.
    static func files(of target: String) throws -> [(path: String, text: String)] {
        try LayeringTests.swiftFiles(of: target).map { path in
            (path, try String(contentsOf: LayeringTests.sources.appendingPathComponent(target).appendingPathComponent(path), encoding: .utf8))
        }
    }

    /// Files of `targets` that contain `needle`, outside `allowed`.
    static func naming(_ needle: String, in targets: [String], outside allowed: Set<String>) throws -> [String] {
        try targets.flatMap { target in
            try files(of: target).filter { $0.text.contains(needle) && !allowed.contains("\(target)/\($0.path)") }.map { "\(target)/\($0.path)" }
        }
    }

    @Test("one composition root: the application, its router, the identity check and the realtime gateway are built in App+build.swift alone, and serve runs what buildServices makes")
    func oneCompositionRoot() throws {
        let root: Set<String> = ["DiaryHTTP/Application/App+build.swift"]
        for constructor in ["Application(", "buildRouter(", "Callers(configuration:", "RealtimeGateway(", "BearerAuthenticator(", "RealtimeDrain(", "WorkerService.keeping("] {
            #expect(try Self.naming(constructor, in: ["DiaryHTTP", "DiaryServer"], outside: root).isEmpty, "\(constructor) outside App+build.swift")
        }
        // The clients of outside services: built where the rest is, or for a one-off command.
        for client in ["AppleIDClient(", "S3Client(configuration:"] {
            #expect(try Self.naming(client, in: ["DiaryHTTP", "DiaryServer"], outside: root.union(["DiaryHTTP/Photos/S3PhotoStore+Command.swift"])).isEmpty, "\(client) outside the composition root")
        }
        let serve = try #require(try Self.files(of: "DiaryServer").first { $0.path == "Commands/ServeCommand.swift" }).text
        #expect(serve.contains("buildServices(configuration:"))
        #expect(!serve.contains("WorkerService") && !serve.contains("makeChangeFeed") && !serve.contains("fromEnvironment(logger"), "serve builds nothing itself")
    }

    @Test("outside Errors/, a problem takes its status from the refusal table: no file names one")
    func statusesFromTheTable() throws {
        #expect(try Self.naming("Problem(status:", in: ["DiaryHTTP"], outside: ["DiaryHTTP/Errors/Problem.swift"]).isEmpty)
        #expect(try Self.naming("DomainError.Reason", in: ["DiaryCore", "DiaryHTTP"], outside: []).isEmpty)
    }

    /// `text` without its comments, which may name anything.
    static func code(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { line in line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line) }
            .joined(separator: "\n")
    }

    @Test("realtime never calls up: a subscription holds no feed, and only the feed's own files call into it from DiaryCore")
    func realtimeCallsGoDown() throws {
        let realtime = try Self.files(of: "DiaryCore").filter { $0.path.hasPrefix("Realtime/") }.map { (path: $0.path, text: Self.code($0.text)) }
        let subscription = try #require(realtime.first { $0.text.contains("final class ChangeSubscription") })
        let body = subscription.text[subscription.text.range(of: "final class ChangeSubscription")!.lowerBound...]
        #expect(!body.contains("ChangeFeed") && !body.contains("feed."), "ChangeSubscription reaches its feed")
        for file in realtime where !file.path.hasPrefix("Realtime/ChangeFeed") {
            #expect(!file.text.contains("ChangeFeed"), "\(file.path) names the feed")
        }
    }

    @Test("the line a channel-level handler takes: the socket's delivery and rules write through RealtimeOutbound, and only the handler's adapter and the gateway know hummingbird-websocket")
    func realtimeHandlerIsReplaceable() throws {
        let handlerTypes = ["import HummingbirdWebSocket", "WebSocketOutboundWriter", "WebSocketInboundStream"]
        let allowed: Set = [
            "DiaryHTTP/Realtime/RealtimeSocket+Handler.swift", "DiaryHTTP/Realtime/RealtimeOutbound.swift", "DiaryHTTP/Realtime/RealtimeGateway.swift",
            "DiaryHTTP/Application/EventLoopBoundHTTPChannel.swift",
        ]
        for type in handlerTypes {
            #expect(try Self.naming(type, in: ["DiaryHTTP", "DiaryCore"], outside: allowed).isEmpty, "\(type)")
        }
        let socket = try Self.files(of: "DiaryHTTP").filter { $0.path.hasPrefix("Realtime/RealtimeSocket") && $0.path != "Realtime/RealtimeSocket+Handler.swift" }
        #expect(socket.count == 3 && socket.allSatisfy { !$0.text.contains("NIOLoopBoundBox") })
        // One box holds the socket's state: the delivery's and the rules'.
        #expect(socket.map { $0.text.matches(of: /(?:let|var)\s+\w+\s*(?::\s*|=\s*)NIOLockedValueBox/).count }.reduce(0, +) == 1)
    }
}
