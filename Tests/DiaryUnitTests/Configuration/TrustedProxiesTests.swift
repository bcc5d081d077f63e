import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing
import TestSupport
@testable import DiaryHTTP

/// Whose address a request is (`TrustedProxies`, `ClientAddressMiddleware`): the peer's,
/// unless the peer is a trusted proxy, and then X-Forwarded-For's from its right end.
@Suite("Client addresses behind trusted proxies")
struct TrustedProxiesTests {
    static let proxies = try! TrustedProxies(parsing: "10.0.0.0/8, 192.168.1.1 ,fd00::/8")

    @Test("the peer is the client unless it is a trusted proxy; the header is read right to left past trusted hops; a hop that is no address stops the walk")
    func resolution() {
        let none = TrustedProxies()
        #expect(none.clientAddress(peer: "10.1.2.3", forwardedFor: ["203.0.113.5"]) == "10.1.2.3")
        #expect(Self.proxies.clientAddress(peer: "198.51.100.7", forwardedFor: ["203.0.113.5"]) == "198.51.100.7")
        #expect(Self.proxies.clientAddress(peer: "10.1.2.3", forwardedFor: []) == "10.1.2.3")
        #expect(Self.proxies.clientAddress(peer: "10.1.2.3", forwardedFor: ["203.0.113.5"]) == "203.0.113.5")
        // A client's own forged entries sit at the left: never reached past an untrusted hop.
        #expect(Self.proxies.clientAddress(peer: "10.1.2.3", forwardedFor: ["1.1.1.1, 203.0.113.5, 192.168.1.1"]) == "203.0.113.5")
        #expect(Self.proxies.clientAddress(peer: "10.1.2.3", forwardedFor: ["1.1.1.1", "203.0.113.5", "10.9.9.9"]) == "203.0.113.5")
        // Every hop a trusted proxy: the leftmost is as far as anyone can say.
        #expect(Self.proxies.clientAddress(peer: "10.1.2.3", forwardedFor: ["10.0.0.2, 10.0.0.1"]) == "10.0.0.2")
        #expect(Self.proxies.clientAddress(peer: "10.1.2.3", forwardedFor: ["203.0.113.5, unknown"]) == "10.1.2.3")
        #expect(Self.proxies.clientAddress(peer: "10.1.2.3", forwardedFor: ["garbage, 10.0.0.7"]) == "10.0.0.7")
        // IPv6, and an IPv4 peer as a dual-stack socket reports it.
        #expect(Self.proxies.clientAddress(peer: "fd12::1", forwardedFor: ["2001:db8::5"]) == "2001:db8::5")
        #expect(Self.proxies.clientAddress(peer: "::ffff:10.0.0.1", forwardedFor: ["203.0.113.5"]) == "203.0.113.5")
        #expect(Self.proxies.clientAddress(peer: nil, forwardedFor: ["203.0.113.5"]) == nil)
    }

    @Test("ranges hold exactly their prefix; anything else in the setting is refused by name")
    func ranges() throws {
        let range = try AddressRange(parsing: "192.168.4.0/22")
        #expect(range.contains(AddressRange.bytes(of: "192.168.7.255")!))
        #expect(!range.contains(AddressRange.bytes(of: "192.168.8.0")!))
        #expect(!range.contains(AddressRange.bytes(of: "::1")!))
        #expect(try AddressRange(parsing: "0.0.0.0/0").contains(AddressRange.bytes(of: "8.8.8.8")!))
        #expect(try AddressRange(parsing: "::1").description == "::1/128")
        for bad in ["10.0.0.0/33", "10.0.0", "example.com", "10.0.0.0/", "10.0.0.0/8/8", "::/129", "10.0.0.0/-1", "10.0.0.0/٣"] {
            #expect(throws: AddressRange.Invalid.self, "\(bad)") { try AddressRange(parsing: bad) }
        }
        #expect(try TrustedProxies(parsing: " ").ranges.isEmpty)
    }

    @Test("the request log names the client address a trusted proxy forwarded, and the peer's otherwise")
    func requestLog() async throws {
        for (trusted, expected) in [("127.0.0.1", "203.0.113.5"), ("10.0.0.0/8", "127.0.0.1")] {
            let recorder = LogRecorder()
            let router = Router(context: AppRequestContext.self)
            router.middlewares.add(ClientAddressMiddleware(trustedProxies: try TrustedProxies(parsing: trusted)))
            router.middlewares.add(RequestLogMiddleware())
            router.get("/who") { _, context in context.clientAddress ?? "none" }
            let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)), logger: recorder.logger())
            try await app.test(.live) { client in
                let reply = try await client.execute(uri: "/who", method: .get, headers: [HTTPFields.Element.Name("X-Forwarded-For")!: "203.0.113.5"])
                #expect(String(buffer: reply.body) == expected)
            }
            let logged = recorder.all.filter { $0.message == "Request" }.map { $0.metadata["client.address"] }
            #expect(logged == [expected])
        }
    }
}
