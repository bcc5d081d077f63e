import DiaryKit
import Foundation
import Testing

/// Sign in with Apple through DiaryKit: the app passes Apple's credential and its raw nonce.
@Suite("Sign in with Apple")
struct AppleSignInTests {
    @Test("the identity token with its raw nonce signs in; the same user comes back; a wrong nonce is refused")
    func appleSignIn() async throws {
        let apple = try FakeAppleIdentity()
        defer { apple.remove() }
        try await LiveServer.with(environment: apple.serverEnvironment) { server in
            let nonce = UUID().uuidString
            let client = server.client()
            let me = try await client.signInWithApple(
                identityToken: try apple.identityToken(subject: "001234.diarykit", rawNonce: nonce), nonce: nonce,
                displayName: "あいこ")
            #expect(me.displayName == "あいこ")
            #expect(try await client.me().id == me.id)

            let again = server.client()
            let secondNonce = UUID().uuidString
            let same = try await again.signInWithApple(
                identityToken: try apple.identityToken(subject: "001234.diarykit", rawNonce: secondNonce), nonce: secondNonce)
            #expect(same.id == me.id)

            let refused = server.client()
            do {
                try await refused.signInWithApple(
                    identityToken: try apple.identityToken(subject: "001234.diarykit", rawNonce: "the app's nonce"),
                    nonce: "another nonce")
                Issue.record("a token for another nonce signed in")
            } catch let error as DiaryError {
                guard case .problem(let problem) = error else { throw error }
                #expect(problem.status == 401 && problem.code == .unauthorized)
            }
            #expect(await refused.isSignedIn == false)
        }
    }
}
