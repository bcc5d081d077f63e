import Foundation

/// Sign in with Apple's side, played by the test: an RSA key published in a JWKS file the
/// server reads (APPLE_JWKS_FILE), and identity tokens signed with it as Apple signs them
/// (RS256, iss https://appleid.apple.com). The openssl command does the cryptography:
/// Foundation has none on Linux, and the tests add no crypto package.
struct FakeAppleIdentity {
    static let audience = "app.zutto.nikki.tests"
    let directory: URL
    let keyID = "diarykit-test-key"

    var keyFile: URL { directory.appendingPathComponent("apple.pem") }
    var jwksFile: URL { directory.appendingPathComponent("apple-jwks.json") }
    /// What the server needs to trust this key.
    var serverEnvironment: [String: String] { ["APPLE_AUDIENCE": Self.audience, "APPLE_JWKS_FILE": jwksFile.path] }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("diarykit-apple-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Self.openssl(["genrsa", "-out", keyFile.path, "2048"])
        let modulusLine = String(decoding: try Self.openssl(["rsa", "-in", keyFile.path, "-noout", "-modulus"]), as: UTF8.self)
        let hex = modulusLine.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "Modulus=", with: "")
        var modulus = Data()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            modulus.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        let jwks: [String: Any] = ["keys": [["kty": "RSA", "kid": keyID, "use": "sig", "alg": "RS256",
                                             "n": Self.base64URL(modulus), "e": "AQAB"]]]
        try JSONSerialization.data(withJSONObject: jwks).write(to: jwksFile)
    }

    /// An identity token for `subject`, whose nonce claim is hex(SHA-256(`rawNonce`)), as the
    /// app sets it on the Apple request.
    func identityToken(subject: String, rawNonce: String?) throws -> String {
        let now = Int(Date().timeIntervalSince1970)
        var claims: [String: Any] = ["iss": "https://appleid.apple.com", "aud": Self.audience, "sub": subject,
                                     "iat": now, "exp": now + 600]
        if let rawNonce { claims["nonce"] = try sha256Hex(rawNonce) }
        let header = Self.base64URL(try JSONSerialization.data(withJSONObject: ["alg": "RS256", "kid": keyID], options: .sortedKeys))
        let payload = Self.base64URL(try JSONSerialization.data(withJSONObject: claims, options: .sortedKeys))
        let input = directory.appendingPathComponent("input-\(UUID().uuidString)")
        try Data("\(header).\(payload)".utf8).write(to: input)
        let signature = try Self.openssl(["dgst", "-sha256", "-sign", keyFile.path, "-binary", input.path])
        return "\(header).\(payload).\(Self.base64URL(signature))"
    }

    func sha256Hex(_ text: String) throws -> String {
        let input = directory.appendingPathComponent("nonce-\(UUID().uuidString)")
        try Data(text.utf8).write(to: input)
        return String(decoding: try Self.openssl(["dgst", "-sha256", "-r", input.path]), as: UTF8.self)
            .split(separator: " ").first.map(String.init) ?? ""
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    @discardableResult
    static func openssl(_ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw LiveServerError("openssl \(arguments.joined(separator: " ")) failed") }
        return data
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
