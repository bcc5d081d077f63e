import Crypto
import Foundation
import _CryptoExtras

/// A compact JWS, split and decoded but not yet trusted.
///
/// Only two algorithms exist here, each tied to its key type: HS256 for our own access
/// tokens and RS256 for Apple's identity tokens. `alg` in the header must name the
/// algorithm of the key being used; `none` and everything else are refused.
struct JSONWebToken {
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
    static let maximumLength = 8 * 1024

    init(compact token: String) throws {
        guard token.utf8.count <= Self.maximumLength else { throw Failure.malformed("too long") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw Failure.malformed("expected three parts") }
        guard let headerData = Base64URL.decode(parts[0]), let payload = Base64URL.decode(parts[1]),
              let signature = Base64URL.decode(parts[2]) else {
            throw Failure.malformed("not base64url")
        }
        do {
            header = try JSONDecoder().decode(Header.self, from: headerData)
        } catch {
            throw Failure.malformed("header is not JSON")
        }
        self.payload = payload
        self.signature = signature
        self.signingInput = Data((parts[0] + "." + parts[1]).utf8)
    }

    func verifyHS256(key: SymmetricKey) throws {
        guard header.alg == "HS256" else { throw Failure.wrongAlgorithm(header.alg) }
        guard HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signingInput, using: key) else {
            throw Failure.badSignature
        }
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

    /// Signs `claims` with HS256. Keys are sorted, so equal claims give equal tokens.
    static func signHS256<Claims: Encodable>(_ claims: Claims, key: SymmetricKey) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let header = Base64URL.encode(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let body = Base64URL.encode(try encoder.encode(claims))
        let input = header + "." + body
        let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: key)
        return input + "." + Base64URL.encode(Data(mac))
    }
}

enum Base64URL {
    static func encode(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: some StringProtocol) -> Data? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
