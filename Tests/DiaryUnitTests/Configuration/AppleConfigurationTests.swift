import AppleIDClient
import Crypto
import Foundation
import Testing
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

@Suite("Sign in with Apple's settings")
struct AppleConfigurationTests {
    static func keyFile(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-\(UUID().uuidString).p8").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("all three key settings turn it on, with the first audience as client id; none leaves it off")
    func complete() throws {
        let file = try Self.keyFile(P256.Signing.PrivateKey().pemRepresentation)
        let on = try AppleConfiguration.fromEnvironment(production: true, [
            "APPLE_TEAM_ID": "TEAM", "APPLE_KEY_ID": "KEY", "APPLE_PRIVATE_KEY_FILE": file, "APPLE_AUDIENCE": "app.first, app.second",
        ])
        #expect(on.credentials?.clientID == "app.first")
        #expect(on.authURL == AppleIDClient.defaultBaseURL)
        #expect(try AppleConfiguration.fromEnvironment(production: true, ["APPLE_AUDIENCE": "app.first"]).credentials == nil)
    }

    @Test("in production a partial set refuses to start and names what is missing; elsewhere it stays off")
    func partial() throws {
        let partial = ["APPLE_TEAM_ID": "TEAM", "APPLE_AUDIENCE": "app.first"]
        #expect(throws: ConfigurationError.self) { try AppleConfiguration.fromEnvironment(production: true, partial) }
        do {
            _ = try AppleConfiguration.fromEnvironment(production: true, partial)
        } catch let error as ConfigurationError {
            #expect(error.description.contains(": APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE not set"))
        }
        #expect(try AppleConfiguration.fromEnvironment(production: false, partial).credentials == nil)
        let noClient = ["APPLE_TEAM_ID": "T", "APPLE_KEY_ID": "K", "APPLE_PRIVATE_KEY_FILE": try Self.keyFile(P256.Signing.PrivateKey().pemRepresentation)]
        #expect(throws: ConfigurationError.self) { try AppleConfiguration.fromEnvironment(production: true, noClient) }
    }

    @Test("a key file that is not a P-256 key in PEM, and an auth URL that is not https, refuse to start")
    func badValues() throws {
        let bad = ["APPLE_TEAM_ID": "T", "APPLE_KEY_ID": "K", "APPLE_PRIVATE_KEY_FILE": try Self.keyFile("not a key"), "APPLE_CLIENT_ID": "app"]
        #expect(throws: ConfigurationError.self) { try AppleConfiguration.fromEnvironment(production: false, bad) }
        #expect(throws: ConfigurationError.self) { try AppleConfiguration.fromEnvironment(production: true, ["APPLE_AUTH_URL": "http://appleid.example"]) }
    }
}
