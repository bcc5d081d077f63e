import Foundation
import Testing
import TestSupport

/// Servers the tests start as processes bind the port `freePort` gave them a moment before.
@Suite("Free ports for child servers")
struct FreePortTests {
    @Test("a free port is never from the kernel's ephemeral range, where any outgoing connection may take it first")
    func belowEphemeralRange() throws {
        let range = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let ephemeralStart = try #require(range.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) })
        for _ in 0..<50 {
            let port = try ScratchCluster.freePort()
            #expect(port < ephemeralStart && port >= 1024, "\(port)")
        }
    }
}
