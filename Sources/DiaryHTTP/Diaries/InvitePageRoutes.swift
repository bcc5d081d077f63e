import DiaryCore
import Foundation
import Hummingbird

/// What a shared invite link reaches outside the app: the page a browser shows
/// (`GET /i/<code>`, `InvitePage`), the image its preview shows, and the app-site association
/// that lets iOS open `/i/*` links in the app instead.
struct InvitePageRoutes {
    let lookup: InviteCodeLookup
    let page: InvitePage
    /// Pages per client address a minute: the page tells a current code from any other, so
    /// it is limited as the join is.
    let limiter: AttemptLimiter<String>

    func register(on router: Router<AppRequestContext>) {
        router.get("i/:code") { _, context -> Response in
            if let wait = limiter.admit(context.clientAddress ?? "unknown") {
                AppMetrics.recordRateLimitRejection("invite_pages")
                throw Problem(.rateLimited, detail: "too many invite pages from this address; try again later", headers: [.retryAfter: String(wait)])
            }
            let current = try await lookup.currentCode(typed: context.parameters.get("code") ?? "")
            return Response(status: current == nil ? .notFound : .ok, headers: Self.pageHeaders, body: .init(byteBuffer: ByteBuffer(string: page.html(code: current))))
        }

        router.get(RouterPath(String(InvitePage.previewPath.dropFirst()))) { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: "image/png", .cacheControl: "public, max-age=86400"],
                body: .init(byteBuffer: ByteBuffer(bytes: InvitePage.previewPNG)))
        }

        // Apple's CDN fetches it over https with no redirect, as application/json.
        router.get(".well-known/apple-app-site-association") { _, _ -> Response in
            guard let appID = page.configuration.appleAppID else {
                throw Problem(.notFound, detail: "APPLE_APP_ID is not set, so no app is associated with this server")
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "public, max-age=3600"],
                body: .init(byteBuffer: ByteBuffer(bytes: try Self.association(appID: appID))))
        }
    }

    static let pageHeaders: HTTPFields = [
        .contentType: "text/html; charset=utf-8",
        .contentSecurityPolicy: InvitePage.contentSecurityPolicy,
        HTTPFields.Element.Name("X-Robots-Tag")!: "noindex, nofollow",
        HTTPFields.Element.Name("Referrer-Policy")!: "no-referrer",
        HTTPFields.Element.Name("X-Content-Type-Options")!: "nosniff",
        // A rotated code's page must change at once.
        .cacheControl: "no-store",
    ]

    /// Claims the invite links, and only them, for the app.
    static func association(appID: String) throws -> Data {
        struct Component: Encodable { let path: String; let comment: String
            enum CodingKeys: String, CodingKey { case path = "/", comment } }
        struct Detail: Encodable { let appIDs: [String]; let components: [Component] }
        struct Links: Encodable { let details: [Detail] }
        struct Association: Encodable { let applinks: Links }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(Association(applinks: Links(details: [
            Detail(appIDs: [appID], components: [Component(path: "/i/*", comment: "invite links open the app, which joins the diary")])
        ])))
    }
}
