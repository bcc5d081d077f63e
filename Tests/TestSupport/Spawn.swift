import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Starts programs with posix_spawn.
///
/// Foundation's `Process.run()` on Linux crashes now and then (swift-corelibs-foundation
/// #5472: an over-read while it lists /proc/self/fd), and a suite that spawns hundreds of
/// processes met it; this path does not list descriptors. Children start with no signal
/// blocked and every signal at its default, whatever the spawning thread had, and with no
/// descriptor of this process's but their standard input, output and error.
public enum Spawn {
    /// Runs a program to its end; its stdout and stderr together, or stderr appended to the
    /// file `errorsPath` when given. The waiting happens on a thread of its own (`OffPool`),
    /// never on the cooperative pool.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, errorsPath: String? = nil
    ) async throws -> (status: Int32, output: String) {
        try await OffPool.run { try runBlocking(executable, arguments, environment: environment, errorsPath: errorsPath) }
    }

    /// `run`, blocking the calling thread: only for a thread that is not the cooperative pool's.
    public static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, errorsPath: String? = nil
    ) throws -> (status: Int32, output: String) {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw SpawnError("pipe: errno \(errno)") }
        let pid: pid_t
        do {
            pid = try spawn(executable, arguments, environment: environment) { actions in
                posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
                if let errorsPath {
                    posix_spawn_file_actions_addopen(&actions, 2, errorsPath, O_WRONLY | O_APPEND | O_CREAT, 0o644)
                } else {
                    posix_spawn_file_actions_adddup2(&actions, pipe[1], 2)
                }
                posix_spawn_file_actions_addclose(&actions, pipe[0])
                posix_spawn_file_actions_addclose(&actions, pipe[1])
            }
        } catch {
            close(pipe[0])
            close(pipe[1])
            throw error
        }
        close(pipe[1])
        var output = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(pipe[0], &buffer, buffer.count)
            if count > 0 { output.append(contentsOf: buffer[0..<count]); continue }
            if count < 0 && errno == EINTR { continue }
            break
        }
        close(pipe[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (exitCode(status), String(decoding: output, as: UTF8.self))
    }

    /// Starts a program with stdin from /dev/null and stdout and stderr appended to
    /// `outputPath`. A file, not a pipe: a child such as `pg_ctl start` leaves a daemon
    /// holding its descriptors, and a pipe would never reach its end.
    public static func start(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, outputPath: String) throws -> SpawnedProcess {
        let pid = try spawn(executable, arguments, environment: environment) { actions in
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_APPEND | O_CREAT, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        return SpawnedProcess(pid: pid)
    }

    private static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String]?, files: (inout posix_spawn_file_actions_t) -> Void
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        files(&actions)
        // Nothing else of this process's: a PostgreSQL a test starts outlives the call, and a
        // socket it held would stay open after this process closed it (SpawnTests).
        precondition(addCloseFrom(&actions, 3) == 0, "posix_spawn_file_actions_addclosefrom_np failed")
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + env).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, env)
        guard spawned == 0 else { throw SpawnError("posix_spawn \(executable): error \(spawned)") }
        return pid
    }

    /// glibc's (2.34 and later), which its Swift module does not declare.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
            fatalError("this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)")
        }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    /// WIFEXITED / WEXITSTATUS, spelled out: the macros do not import. A signal gives 128 + it.
    static func exitCode(_ status: Int32) -> Int32 {
        (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}

/// A child started by `Spawn.start`, reaped when it is first seen to have ended.
public final class SpawnedProcess: @unchecked Sendable {
    public let pid: pid_t
    private let lock = NSLock()
    private var status: Int32?

    init(pid: pid_t) {
        self.pid = pid
    }

    public var isRunning: Bool { poll() == nil }

    /// Waits for the child to end, polling without holding a thread; its exit code.
    public func exit() async throws -> Int32 {
        try await waitForValue("the process to exit", within: .seconds(24 * 3600)) { poll() }
    }
    /// The exit code once it has ended (128 + the signal if one ended it), else -1.
    public var terminationStatus: Int32 { poll() ?? -1 }

    private func poll() -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        let result = waitpid(pid, &raw, WNOHANG)
        if result == pid {
            status = Spawn.exitCode(raw)
        } else if result < 0 && errno == ECHILD {
            status = -1
        }
        return status
    }
}

public struct SpawnError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
