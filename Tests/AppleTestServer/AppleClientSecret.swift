import Crypto
import Foundation

/// The client secret check Apple makes at `/auth/token` and `/auth/revoke`: a compact JWS signed
/// ES256 with the team's Sign in with Apple key.
///
/// Header `{"alg":"ES256","kid":keyID}`; claims `iss` (team), `sub` (client ID), `aud`
/// "https://appleid.apple.com" (a string or an array holding it), `iat` and `exp` as integer
/// seconds, `exp` in the future and at most 180 days (15777000 s) after `iat`, `iat` at most 60 s
/// ahead. Deliberate strictness, so that a secret passing here also passes at Apple: the signature
/// must be the raw 64-byte r||s (a DER signature is refused) and the times integers (jwt-kit's
/// default serializer writes a fractional `Date`).
struct AppleClientSecret: Sendable {
    static let audience = "https://appleid.apple.com"
    /// 180 days less a little, Apple's limit on a client secret's lifetime.
    static let maximumLifetime = 15_777_000

    let teamID: String
    let clientID: String
    let keyID: String
    let publicKey: P256.Signing.PublicKey

    /// Why Apple would refuse `token` at `now`, or nil when it would accept it.
    func problem(with token: String, now: Date) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { return "the JWT has \(parts.count) parts, not 3" }
        guard let headerData = Self.base64URLDecode(parts[0]),
            let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any]
        else { return "the JWT header is not base64url JSON" }
        guard header["alg"] as? String == "ES256" else {
            return "the JWT header alg is \(describe(header["alg"])), not ES256"
        }
        guard header["kid"] as? String == keyID else {
            return "the JWT header kid is \(describe(header["kid"])), not \(keyID)"
        }
        guard let claimsData = Self.base64URLDecode(parts[1]),
            let claims = (try? JSONSerialization.jsonObject(with: claimsData)) as? [String: Any]
        else { return "the JWT claims are not base64url JSON" }
        guard let signature = Self.base64URLDecode(parts[2]) else {
            return "the JWT signature is not base64url"
        }
        guard signature.count == 64, let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else {
            return "the JWT signature is \(signature.count) bytes, not a raw 64-byte r||s"
        }
        guard publicKey.isValidSignature(ecdsa, for: Data("\(parts[0]).\(parts[1])".utf8)) else {
            return "the JWT signature does not verify with the key \(keyID)"
        }
        guard claims["iss"] as? String == teamID else {
            return "the JWT iss is \(describe(claims["iss"])), not the team \(teamID)"
        }
        guard claims["sub"] as? String == clientID else {
            return "the JWT sub is \(describe(claims["sub"])), not the client \(clientID)"
        }
        let audiences = (claims["aud"] as? String).map { [$0] } ?? (claims["aud"] as? [Any])?.compactMap { $0 as? String } ?? []
        guard audiences.contains(Self.audience) else {
            return "the JWT aud is \(describe(claims["aud"])), not \(Self.audience)"
        }
        guard let iat = Self.integer(claims["iat"]) else {
            return "the JWT iat is \(describe(claims["iat"])), not an integer number of seconds"
        }
        guard let exp = Self.integer(claims["exp"]) else {
            return "the JWT exp is \(describe(claims["exp"])), not an integer number of seconds"
        }
        let seconds = Int(now.timeIntervalSince1970.rounded(.down))
        if iat > seconds + 60 {
            return "the JWT iat is \(iat - seconds) s in the future, over 60"
        }
        if exp <= seconds {
            return "the JWT expired \(seconds - exp) s ago (exp \(exp))"
        }
        if exp - iat > Self.maximumLifetime {
            return "the JWT lives \(exp - iat) s (exp - iat), over \(Self.maximumLifetime) (180 days)"
        }
        return nil
    }

    private func describe(_ value: Any?) -> String {
        switch value {
        case nil: "missing"
        case let text as String: "'\(text)'"
        case let value?: "\(value)"
        }
    }

    /// A JSON number with no fractional part (`1.5` and `"1"` are not integers).
    private static func integer(_ value: Any?) -> Int? {
        guard let value, !(value is String), !(value is Bool) else { return nil }
        if let int = value as? Int { return int }
        guard let double = value as? Double, double.rounded() == double, abs(double) < 1e15 else { return nil }
        return Int(double)
    }

    static func base64URLDecode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        if base64.contains("=") { return nil }  // JWS forbids padding
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    static func base64URLEncode(_ data: Data) -> String {
        data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
