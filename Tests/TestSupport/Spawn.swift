import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program to its end with posix_spawn, its stdout and stderr together.
///
/// Foundation's `Process.run()` on Linux crashes now and then (swift-corelibs-foundation
/// #5472: an over-read while it lists /proc/self/fd), and a suite that spawns hundreds of
/// tools met it; this path does not list descriptors.
public enum Spawn {
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, output: String) {
        var pipe: [Int32] = [0, 0]
        guard Glibc.pipe(&pipe) == 0 else { throw SpawnError("pipe: errno \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 2)
        posix_spawn_file_actions_addclose(&actions, pipe[0])
        posix_spawn_file_actions_addclose(&actions, pipe[1])
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + env).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, env)
        close(pipe[1])
        guard spawned == 0 else {
            close(pipe[0])
            throw SpawnError("posix_spawn \(executable): error \(spawned)")
        }
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
        // WIFEXITED / WEXITSTATUS, spelled out: the macros do not import.
        let exitCode = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (exitCode, String(decoding: output, as: UTF8.self))
    }
}

public struct SpawnError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
