import Foundation
import TestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What headless Chromium made of an unpacked export's index.html.
struct RenderedBook {
    struct Image: Equatable, CustomStringConvertible {
        var src: String
        /// 0 when the browser could not load or decode the file.
        var naturalWidth: Int
        var description: String { "\(src) (naturalWidth \(naturalWidth))" }
    }

    /// The document after its load event, serialised by `--dump-dom` (with the check's
    /// `data-natural-widths` on <body>).
    var dom: String
    /// Every <img>, in document order.
    var images: [Image]
    var screenshot: URL

    var unloadedImages: [Image] { images.filter { $0.naturalWidth == 0 } }
}

/// Opens an export's index.html in headless Chromium with networking off, without a DevTools
/// client: one run dumps the DOM of a copy that records each image's naturalWidth on load,
/// another takes a screenshot of the page itself.
///
/// Networking is off twice over: under `unshare --net` (a network namespace with nothing in
/// it) when the machine allows one, and always through a proxy that is not there, with
/// loopback not bypassed. Either alone keeps every request on the machine.
struct HeadlessChromium {
    enum Failure: Error, CustomStringConvertible {
        case notInstalled
        case timedOut(step: String, after: Duration, log: String)
        case exited(step: String, status: Int32, log: String)
        case noReport(String)

        var description: String {
            switch self {
            case .notInstalled:
                "headless Chromium is not installed: run scripts/test-tools.sh install (make test does), or set CHROMIUM to a Chromium or Chrome binary"
            case let .timedOut(step, after, log):
                "Chromium (\(step)) did not finish within \(after) and was killed\n\(log)"
            case let .exited(step, status, log):
                "Chromium (\(step)) exited with status \(status)\n\(log)"
            case let .noReport(detail):
                "Chromium rendered the book but the image check did not report: \(detail)"
            }
        }
    }

    /// CHROMIUM if set, else `chromium` (Debian's package) on PATH.
    static func binary() throws -> String {
        if let configured = ProcessInfo.processInfo.environment["CHROMIUM"], !configured.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: configured) else { throw Failure.notInstalled }
            return configured
        }
        guard let found = onPath("chromium") else { throw Failure.notInstalled }
        return found
    }

    /// Renders `indexHTML` (inside an unpacked export, next to its photos/ folder) and writes a
    /// PNG screenshot of it to `screenshot`. Each of the two browser runs gets `timeout`.
    static func render(indexHTML: URL, screenshot: URL, timeout: Duration = .seconds(60)) async throws -> RenderedBook {
        let chromium = try binary()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }

        // A sibling, so the relative photos/ paths resolve exactly as they do for index.html.
        let check = indexHTML.deletingLastPathComponent().appendingPathComponent("check.html")
        try withCheckScript(try String(contentsOf: indexHTML, encoding: .utf8)).write(to: check, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: check) }

        let offline = await offlinePrefix()
        let dom = try await run(
            chromium, offline: offline, step: "dump-dom", scratch: scratch, timeout: timeout,
            arguments: ["--dump-dom", check.absoluteString])
        try? FileManager.default.removeItem(at: screenshot)
        _ = try await run(
            chromium, offline: offline, step: "screenshot", scratch: scratch, timeout: timeout,
            arguments: ["--screenshot=\(screenshot.path)", "--window-size=1000,3000", indexHTML.absoluteString])
        guard FileManager.default.fileExists(atPath: screenshot.path) else {
            throw Failure.noReport("no screenshot at \(screenshot.path)")
        }
        return RenderedBook(dom: dom, images: try images(in: dom), screenshot: screenshot)
    }

    /// What a page served over loopback made Chromium do: its DOM after load, every console
    /// message (a Content-Security-Policy's refusals among them), and every request the page
    /// made, which NetLog records with the page's site as their network isolation key, apart
    /// from the browser's own background requests.
    struct VisitedPage {
        var dom: String
        var consoleMessages: [String]
        var pageRequests: [String]
        var screenshot: URL
    }

    /// Opens `url` (on 127.0.0.1) and writes a phone-sized screenshot to `screenshot`. Loopback
    /// is reached directly; any other host only through a proxy that is not there.
    static func visit(_ url: URL, screenshot: URL, timeout: Duration = .seconds(60)) async throws -> VisitedPage {
        let chromium = try binary()
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let netLog = scratch.appendingPathComponent("net.json")
        var consoleMessages: [String] = []
        let dom = try await run(
            chromium, offline: [], step: "dump-dom", scratch: scratch, timeout: timeout, reachLoopback: true,
            arguments: ["--enable-logging=stderr", "--v=0", "--log-net-log=\(netLog.path)", "--dump-dom", url.absoluteString],
            log: { consoleMessages = $0.split(separator: "\n").filter { $0.contains(":CONSOLE") }.map(String.init) })
        try? FileManager.default.removeItem(at: screenshot)
        try FileManager.default.createDirectory(at: screenshot.deletingLastPathComponent(), withIntermediateDirectories: true)
        _ = try await run(
            chromium, offline: [], step: "screenshot", scratch: scratch, timeout: timeout, reachLoopback: true,
            arguments: ["--screenshot=\(screenshot.path)", "--window-size=390,844", url.absoluteString])
        guard FileManager.default.fileExists(atPath: screenshot.path) else { throw Failure.noReport("no screenshot at \(screenshot.path)") }
        return VisitedPage(dom: dom, consoleMessages: consoleMessages, pageRequests: try requests(in: netLog, site: "\(url.scheme ?? "http")://\(url.host ?? "")"), screenshot: screenshot)
    }

    /// The URLs of the requests NetLog started for pages of `site`.
    static func requests(in netLog: URL, site: String) throws -> [String] {
        guard let log = try JSONSerialization.jsonObject(with: Data(contentsOf: netLog)) as? [String: Any],
            let constants = log["constants"] as? [String: Any], let types = constants["logEventTypes"] as? [String: Int],
            let startJob = types["URL_REQUEST_START_JOB"], let events = log["events"] as? [[String: Any]]
        else { throw Failure.noReport("the NetLog has no URL_REQUEST_START_JOB events to read") }
        return events.compactMap { event in
            guard event["type"] as? Int == startJob, let parameters = event["params"] as? [String: Any],
                let key = parameters["network_isolation_key"] as? String, key.hasPrefix(site + " ") else { return nil }
            return parameters["url"] as? String
        }
    }

    /// Records each image's naturalWidth on <body> once the page has loaded. It goes first in
    /// <head>, before the book's Content-Security-Policy, which refuses scripts parsed after it.
    static let checkScript = """
        <script>addEventListener("load", function () {
          var widths = [];
          for (var i = 0; i < document.images.length; i++) widths.push(document.images[i].naturalWidth);
          document.body.setAttribute("data-natural-widths", widths.join(" "));
        });</script>
        """

    static func withCheckScript(_ html: String) -> String {
        guard let head = html.range(of: "<head>", options: .caseInsensitive) else { return html + checkScript }
        var copy = html
        copy.insert(contentsOf: checkScript, at: head.upperBound)
        return copy
    }

    /// Pairs the <img> elements of the dumped DOM with the widths the check script wrote.
    static func images(in dom: String) throws -> [RenderedBook.Image] {
        guard let report = dom.firstMatch(of: /data-natural-widths="([0-9 ]*)"/) else {
            throw Failure.noReport("no data-natural-widths on <body>; did the script run?")
        }
        let widths = report.1.split(separator: " ").compactMap { Int($0) }
        let sources = dom.matches(of: /<img\b[^>]*?\bsrc="([^"]*)"/).map { String($0.1).replacingOccurrences(of: "&amp;", with: "&") }
        guard widths.count == sources.count else {
            throw Failure.noReport("\(widths.count) widths for \(sources.count) <img> elements")
        }
        return zip(sources, widths).map { RenderedBook.Image(src: $0, naturalWidth: $1) }
    }

    /// `unshare --net --` when this machine lets us make a network namespace (root, as in CI,
    /// or unprivileged user namespaces), else nothing: the dead proxy still holds.
    static func offlinePrefix() async -> [String] {
        guard let unshare = onPath("unshare") else { return [] }
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("unshare-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: probe) }
        let status = try? await launch(unshare, ["--net", "true"], environment: [:], output: probe, timeout: .seconds(10))
        return status == 0 ? [unshare, "--net", "--"] : []
    }

    /// One browser run in a fresh profile and HOME, with networking off; its standard output.
    /// `reachLoopback` lets 127.0.0.1 past the dead proxy, as Chromium does by default; `log`
    /// is given the browser's standard error.
    static func run(
        _ chromium: String, offline: [String], step: String, scratch: URL, timeout: Duration, reachLoopback: Bool = false, arguments: [String],
        log readLog: (String) -> Void = { _ in }
    ) async throws -> String {
        let home = scratch.appendingPathComponent(step)
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        environment["HOME"] = home.path
        environment["XDG_CONFIG_HOME"] = home.appendingPathComponent(".config").path
        environment["XDG_CACHE_HOME"] = home.appendingPathComponent(".cache").path
        let flags = [
            "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
            "--user-data-dir=\(home.appendingPathComponent("profile").path)",
            "--proxy-server=127.0.0.1:9",
            "--virtual-time-budget=10000",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
            "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
            "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "--force-color-profile=srgb",
        ]
        let command = offline + [chromium] + flags + (reachLoopback ? [] : ["--proxy-bypass-list=<-loopback>"]) + arguments
        let output = home.appendingPathComponent("stdout")
        let log = home.appendingPathComponent("stderr")
        let status = try await launch(command[0], Array(command.dropFirst()), environment: environment, output: output, errors: log, timeout: timeout)
        let errors = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        readLog(errors)
        let tail = errors.split(separator: "\n").suffix(15).joined(separator: "\n")
        guard let status else { throw Failure.timedOut(step: step, after: timeout, log: tail) }
        guard status == 0 else { throw Failure.exited(step: step, status: status, log: tail) }
        return try String(contentsOf: output, encoding: .utf8)
    }

    /// Runs a program to its end, or kills its process group after `timeout`: nil then.
    /// Foundation's Process makes the child a group leader, so the kill takes Chromium's
    /// renderer and GPU processes with it.
    static func launch(
        _ executable: String, _ arguments: [String], environment: [String: String], output: URL, errors: URL? = nil, timeout: Duration
    ) async throws -> Int32? {
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let stdout = try FileHandle(forWritingTo: output)
        defer { try? stdout.close() }
        let stderr = try errors.map { errors in
            _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
            return try FileHandle(forWritingTo: errors)
        }
        defer { try? stderr?.close() }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty { process.environment = environment }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = stderr ?? FileHandle.nullDevice
        let (exits, exit) = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { finished in
            exit.yield(finished.terminationStatus)
            exit.finish()
        }
        try process.run()
        let pid = process.processIdentifier
        do {
            return try await withTimeLimit("chromium to exit", within: timeout) {
                var status: Int32 = -1
                for await code in exits { status = code }
                return status
            }
        } catch {
            kill(-pid, SIGKILL)
            try? await waitUntil("chromium to die") { !process.isRunning }
            return nil
        }
    }

    static func onPath(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
