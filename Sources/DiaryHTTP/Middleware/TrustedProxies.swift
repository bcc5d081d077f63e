import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The proxies whose `X-Forwarded-For` is believed (`TRUSTED_PROXIES`: addresses and CIDR
/// ranges). A client's address is its connection's peer, unless that peer is one of them:
/// then the header is read from its right end, past every trusted hop, and the first address
/// no trusted proxy is at is the client's. Anyone can send the header, so from any other
/// peer it is ignored; and only its right end was written by a proxy we trust, so its left
/// end is never taken on trust.
package struct TrustedProxies: Sendable, Equatable {
    package let ranges: [AddressRange]

    package init(ranges: [AddressRange] = []) {
        self.ranges = ranges
    }

    /// Comma-separated addresses and ranges: `10.0.0.0/8, 127.0.0.1, fd00::/8`.
    package init(parsing text: String) throws(AddressRange.Invalid) {
        ranges = try text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map(AddressRange.init(parsing:))
    }

    /// The client's address, given the connection's peer and the request's X-Forwarded-For
    /// fields in the order they came.
    package func clientAddress(peer: String?, forwardedFor: [String]) -> String? {
        guard var client = peer, !ranges.isEmpty, isTrusted(client) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            // A hop that is no address at all ends the walk at the last proxy that wrote one.
            guard let bytes = AddressRange.bytes(of: hop) else { break }
            client = AddressRange.text(of: bytes)
            guard isTrusted(client) else { break }
        }
        return client
    }

    func isTrusted(_ address: String) -> Bool {
        guard let bytes = AddressRange.bytes(of: address) else { return false }
        return ranges.contains { $0.contains(bytes) }
    }
}

/// An IPv4 or IPv6 address with a prefix length: `192.168.0.0/16`, or `10.1.2.3` alone (/32).
package struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    let network: [UInt8]
    let prefix: Int

    package struct Invalid: Error, CustomStringConvertible {
        package let text: String
        package var description: String { "\"\(text)\" is neither an IP address nor a CIDR range" }
    }

    package init(parsing text: String) throws(Invalid) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let bytes = Self.bytes(of: String(parts[0])) else { throw Invalid(text: text) }
        let bits = bytes.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...bits).contains(given), parts[1].allSatisfy(\.isASCII) else { throw Invalid(text: text) }
            prefix = given
        }
        self.network = bytes
        self.prefix = prefix
    }

    package var description: String { "\(Self.text(of: network))/\(prefix)" }

    func contains(_ address: [UInt8]) -> Bool {
        guard address.count == network.count else { return false }
        var remaining = prefix
        for (a, b) in zip(address, network) where remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xFF : ~(0xFF >> UInt8(remaining))
            guard a & mask == b & mask else { return false }
            remaining -= 8
        }
        return true
    }

    /// 4 bytes for IPv4, 16 for IPv6; an IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, as a
    /// dual-stack socket reports an IPv4 peer) is its IPv4 address.
    static func bytes(of text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes[12...]) }
        return bytes
    }

    /// The address's usual spelling (inet_ntop's).
    static func text(of bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        _ = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
