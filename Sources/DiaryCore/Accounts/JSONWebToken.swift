import Crypto
package import Foundation
import _CryptoExtras

/// A compact JWS, split and decoded but not yet trusted.
///
/// Only two algorithms exist here, each tied to its key type: HS256 for our own access
/// tokens and RS256 for Apple's identity tokens. `alg` in the header must name the
/// algorithm of the key being used; `none` and everything else are refused.
package struct JSONWebToken {
    struct Header: Decodable {
        var alg: String
        var kid: String?
        var typ: String?
    }

    let header: Header
    let payload: Data
    private let signingInput: Data
    private let signature: Data

    enum Failure: Error, CustomStringConvertible {
        case malformed(String)
        case badSignature
        case wrongAlgorithm(String)

        var description: String {
            switch self {
            case .malformed(let reason): "malformed token: \(reason)"
            case .badSignature: "signature does not verify"
            case .wrongAlgorithm(let alg): "algorithm \(alg) is not accepted"
            }
        }
    }

    /// Tokens are small; anything larger than this is refused before it is decoded.
    package static let maximumLength = 8 * 1024

    init(compact token: String) throws {
        let utf8 = token.utf8
        guard utf8.count <= Self.maximumLength else { throw Failure.malformed("too long") }
        let dot = UInt8(ascii: ".")
        guard let firstDot = utf8.firstIndex(of: dot),
              let secondDot = utf8[utf8.index(after: firstDot)...].firstIndex(of: dot),
              !utf8[utf8.index(after: secondDot)...].contains(dot) else {
            throw Failure.malformed("expected three parts")
        }
        let headerText = utf8[..<firstDot]
        guard let payload = Base64URL.decode(utf8[utf8.index(after: firstDot)..<secondDot]),
              let signature = Base64URL.decode(utf8[utf8.index(after: secondDot)...]) else {
            throw Failure.malformed("not base64url")
        }
        if headerText.elementsEqual(Self.ownHeader.utf8) {
            // Every access token we sign has this header: no JSON to parse on each request.
            header = Header(alg: "HS256", kid: nil, typ: "JWT")
        } else {
            guard let headerData = Base64URL.decode(headerText) else { throw Failure.malformed("not base64url") }
            do {
                header = try JSONDecoder().decode(Header.self, from: headerData)
            } catch {
                throw Failure.malformed("header is not JSON")
            }
        }
        self.payload = payload
        self.signature = signature
        self.signingInput = Data(utf8[..<secondDot])
    }

    /// `keyed` is an HMAC that has absorbed the key and nothing else: a copy of one made
    /// once saves hashing the key again for every request.
    func verifyHS256(keyed: HMAC<SHA256>) throws {
        guard header.alg == "HS256" else { throw Failure.wrongAlgorithm(header.alg) }
        var mac = keyed
        mac.update(data: signingInput)
        guard mac.finalize() == signature else { throw Failure.badSignature }
    }

    func verifyRS256(key: _RSA.Signing.PublicKey) throws {
        guard header.alg == "RS256" else { throw Failure.wrongAlgorithm(header.alg) }
        let valid = key.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature),
            for: SHA256.hash(data: signingInput),
            padding: .insecurePKCS1v1_5
        )
        guard valid else { throw Failure.badSignature }
    }

    func claims<Claims: Decodable>(as type: Claims.Type) throws -> Claims {
        do {
            return try JSONDecoder().decode(Claims.self, from: payload)
        } catch {
            throw Failure.malformed("claims do not decode")
        }
    }

    /// The header of every token `signHS256` makes, base64url-encoded.
    static let ownHeader = Base64URL.encode(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))

    /// Signs `claims` with HS256. Keys are sorted, so equal claims give equal tokens.
    static func signHS256<Claims: Encodable>(_ claims: Claims, key: SymmetricKey) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = Base64URL.encode(try encoder.encode(claims))
        let input = ownHeader + "." + body
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: key)
        return input + "." + Base64URL.encode(Data(mac))
    }
}

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
