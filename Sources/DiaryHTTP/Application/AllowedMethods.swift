import Hummingbird

/// Which methods each route accepts, so that a known path called with another method
/// is a 405 with `Allow`, not a 404. Mirrors the paths of openapi.yaml.
enum AllowedMethods {
    static let routes: [(template: [Substring], methods: [HTTPRequest.Method])] = [
        ("/health", [.get, .head]), ("/ready", [.get, .head]), ("/metrics", [.get]), ("/openapi.yaml", [.get]),
        ("/v1/auth/apple", [.post]), ("/v1/auth/dev", [.post]), ("/v1/auth/refresh", [.post]), ("/v1/auth/logout", [.post]),
        ("/v1/me", [.get, .patch, .delete]), ("/v1/questions/today", [.get]),
        ("/v1/me/devices", [.get]), ("/v1/me/photo", [.put, .delete]), ("/v1/me/devices/:id", [.put, .delete]),
        ("/v1/diaries", [.get, .post]), ("/v1/diaries/join", [.post]),
        ("/v1/diaries/:id", [.get, .patch]), ("/v1/diaries/:id/invite-code", [.post]), ("/v1/diaries/:id/restore", [.post]), ("/v1/invites/:id", [.get]),
        ("/v1/diaries/:id/members", [.get]), ("/v1/diaries/:id/members/:id", [.delete]),
        ("/v1/diaries/:id/entries", [.get, .post]), ("/v1/diaries/:id/entries/:id", [.get, .patch, .delete]),
        ("/v1/diaries/:id/entries/:id/read", [.post]), ("/v1/diaries/:id/entries/:id/reads", [.get]),
        ("/v1/diaries/:id/changes", [.get]), ("/v1/realtime", [.get]),
        ("/v1/photos", [.post]), ("/v1/photos/:id", [.get]), ("/v1/webhooks/revenuecat", [.post]), ("/v1/webhooks/apple", [.post]),
        ("/v1/diaries/:id/calendar", [.get]), ("/v1/diaries/:id/export", [.get]), ("/v1/me/export", [.get]),
        ("/v1/data-safety", [.get]), ("/v1/service-status", [.get]),
        ("/i/:id", [.get]), (InvitePage.previewPath, [.get]), ("/.well-known/apple-app-site-association", [.get]),
    ].map { (template: $0.0.split(separator: "/"), methods: $0.1) }

    /// The methods `path` accepts, or nil if no route has that shape.
    static func methods(for path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "/")
        let matches = routes.filter { route in
            route.template.count == segments.count
                && zip(route.template, segments).allSatisfy { template, segment in template.hasPrefix(":") || template == segment }
        }
        guard !matches.isEmpty else { return nil }
        // A literal segment beats a parameter: /v1/diaries/join is not /v1/diaries/:id.
        let best = matches.max { lhs, rhs in
            lhs.template.filter { !$0.hasPrefix(":") }.count < rhs.template.filter { !$0.hasPrefix(":") }.count
        }
        return best?.methods
    }
}
