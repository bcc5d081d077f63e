package import Foundation

/// RFC 4648 §5, without padding, byte by byte: every request decodes its token's three
/// parts, so they go straight from UTF-8 to bytes, with no padding or replacements.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (value, character) in alphabet.enumerated() { values[Int(character)] = UInt8(value) }
        return values
    }()

    package static func encode(_ data: Data) -> String {
        var output = [UInt8]()
        output.reserveCapacity((data.count * 4 + 2) / 3)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in data {
            buffer = buffer << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(alphabet[Int(buffer >> UInt32(bits) & 0x3F)])
            }
        }
        if bits > 0 { output.append(alphabet[Int(buffer << UInt32(6 - bits) & 0x3F)]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// Whether every character is of the alphabet (no padding): the shape of a token or
    /// cursor, before decoding says whether it is one.
    package static func usesAlphabetOnly(_ text: some StringProtocol) -> Bool {
        text.utf8.allSatisfy { values[Int($0)] != 0xFF }
    }

    /// Only the canonical spelling: no padding, no other characters, unused bits zero.
    package static func decode(_ text: some StringProtocol) -> Data? {
        decode(text.utf8)
    }

    package static func decode(_ utf8: some Collection<UInt8>) -> Data? {
        guard utf8.count % 4 != 1 else { return nil }
        var output = Data(count: utf8.count * 3 / 4)
        let valid = output.withUnsafeMutableBytes { (output: UnsafeMutableRawBufferPointer) -> Bool in
            var buffer: UInt32 = 0
            var bits = 0
            var written = 0
            for character in utf8 {
                let value = values[Int(character)]
                guard value != 0xFF else { return false }
                buffer = (buffer << 6 | UInt32(value)) & 0xFFFF
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    output[written] = UInt8(truncatingIfNeeded: buffer >> UInt32(bits))
                    written += 1
                }
            }
            return buffer & ((1 << UInt32(bits)) - 1) == 0
        }
        return valid ? output : nil
    }
}
