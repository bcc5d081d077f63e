import Crypto
import Dispatch
import Foundation
import Logging
import NIOConcurrencyHelpers
import _CryptoExtras
@testable import DiaryCore

/// An RSA key made for the fuzzing run, published to the verifier as a JWKS file in place of
/// Apple's, so that claims the fuzzer writes can verify.
final class FuzzSigningKey: Sendable {
    static let shared = FuzzSigningKey()
    static let audience = "app.zutto-nikki.fuzz"
    static let kid = "fuzz-key"

    let key: _RSA.Signing.PrivateKey
    let verifier: AppleIdentityVerifier

    private init() {
        key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
        let primitives = try! key.publicKey.getKeyPrimitives()
        let jwks = #"{"keys":[{"kty":"RSA","kid":"\#(Self.kid)","use":"sig","alg":"RS256","n":"\#(Base64URL.encode(primitives.modulus))","e":"\#(Base64URL.encode(primitives.publicExponent))"}]}"#
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fuzz-jwks-\(getpid()).json").path
        try! Data(jwks.utf8).write(to: URL(fileURLWithPath: path))
        verifier = AppleIdentityVerifier(
            configuration: .init(audiences: [Self.audience], jwksURL: URL(string: "https://appleid.invalid/auth/keys")!, jwksFile: path),
            logger: Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
        )
    }

    /// A compact JWS of `claims`, the bytes as they are, signed RS256 under `kid`.
    func sign(claims: [UInt8]) -> String {
        let header = Base64URL.encode(Data(#"{"alg":"RS256","kid":"\#(Self.kid)","typ":"JWT"}"#.utf8))
        let input = header + "." + Base64URL.encode(Data(claims))
        let signature = try! key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Waits for `body` on the calling thread: libFuzzer calls a target synchronously.
    static func run<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let result = NIOLockedValueBox<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await body()
            result.withLockedValue { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLockedValue { $0! }
    }
}
