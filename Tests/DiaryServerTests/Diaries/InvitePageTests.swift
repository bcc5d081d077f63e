import DiaryModels
import Foundation
import Hummingbird
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP

/// The invite page (`GET /i/<code>`), its preview image and the app-site association, through
/// the real application.
@Suite("The invite page")
struct InvitePageTests {
    static let app: InvitePageConfiguration = {
        var configuration = InvitePageConfiguration()
        configuration.appleAppID = "ABCDE12345.app.zutto-nikki"
        configuration.appStoreURL = URL(string: "https://apps.apple.com/jp/app/id1234567890")!
        return configuration
    }()

    @Test("a current code: the code large, the app's scheme and the App Store, preview tags, noindex and a strict policy; nothing of the diary or its owner")
    func currentCode() async throws {
        try await APIHarness.run(invitePage: Self.app) { api in
            let aiko = try await api.signIn("招待する愛子")
            let diary = try await api.createDiary("ふたりの秘密の日記", type: .couple, token: aiko.accessToken)
            let page = try await api.call(.get, "/i/\(diary.inviteCode)")
            #expect(page.status == .ok)
            #expect(page.headers[.contentType] == "text/html; charset=utf-8")
            Self.expectPrivate(page)
            #expect(page.text.contains(#"<p class="code" id="code">\#(diary.inviteCode)</p>"#))
            #expect(page.text.contains(#"href="zuttonikki://join?code=\#(diary.inviteCode)""#))
            #expect(page.text.contains(#"href="https://apps.apple.com/jp/app/id1234567890""#))
            #expect(page.text.contains("交換日記に招待されています"))
            #expect(!page.text.contains("ふたりの秘密の日記") && !page.text.contains("愛子") && !page.text.contains(diary.id.uuidString.lowercased()))
            #expect(!page.text.contains(aiko.user.id.uuidString.lowercased()))
            // As people type it: lower case, hyphens, O for 0 and I or L for 1.
            let typed = diary.inviteCode.lowercased().replacingOccurrences(of: "0", with: "o").replacingOccurrences(of: "1", with: "l")
            let loose = try await api.call(.get, "/i/\(typed.prefix(5))-\(typed.dropFirst(5))")
            #expect(loose.status == .ok && loose.text.contains(#"id="code">\#(diary.inviteCode)<"#))
        }
    }

    @Test("a rotated, unknown or impossible code gets the same page, saying the invitation is no longer valid, with no code; the new code's page works")
    func invalidCodes() async throws {
        try await APIHarness.run(invitePage: Self.app) { api in try await Self.invalidCodes(api, tag: "") }
    }

    /// Also run on a Citus cluster (CitusClusterTests), with `tag` making its names its own.
    static func invalidCodes(_ api: APIHarness, tag: String) async throws {
        do {
            let aiko = try await api.signIn("aiko\(tag)")
            let diary = try await api.createDiary("日記", type: .couple, token: aiko.accessToken)
            let rotated = try await api.call(.post, "/v1/diaries/\(diary.id)/invite-code", token: aiko.accessToken).decode(InviteCodeResponse.self)
            var pages: [String] = []
            for code in [diary.inviteCode, "ZZZZZZZZZZ", "%3Cscript%3E", String(repeating: "A", count: 40), "日記"] {
                let page = try await api.call(.get, "/i/\(code)")
                #expect(page.status == .notFound, "\(code)")
                Self.expectPrivate(page)
                #expect(page.text.contains(#"id="invalid">この招待は無効になっています。"#))
                #expect(!page.text.contains(#"class="code""#) && !page.text.contains("zuttonikki://"))
                pages.append(page.text)
            }
            #expect(Set(pages).count == 1, "every invalid code gets one and the same page")
            #expect(try await api.call(.get, "/i/\(rotated.inviteCode)").status == .ok)
        }
    }

    @Test("the preview image is the PNG og:image names, 1200×630")
    func previewImage() async throws {
        try await APIHarness.run { api in
            let image = try await api.call(.get, "/invite-preview.png")
            #expect(image.status == .ok && image.headers[.contentType] == "image/png")
            let bytes = [UInt8](image.body)
            #expect(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
            let width = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }, height = bytes[20..<24].reduce(0) { $0 << 8 | Int($1) }
            #expect(width == 1200 && height == 630)
            let page = try await api.call(.get, "/i/0000000000")
            #expect(page.text.contains(#"<meta property="og:image" content="http://127.0.0.1:0/invite-preview.png">"#))
        }
    }

    @Test("the app-site association claims /i/* for APPLE_APP_ID as application/json, no redirect; unset, 404")
    func appSiteAssociation() async throws {
        try await APIHarness.run(invitePage: Self.app) { api in
            let association = try await api.call(.get, "/.well-known/apple-app-site-association")
            #expect(association.status == .ok && association.headers[.contentType] == "application/json")
            let json = try #require(try JSONSerialization.jsonObject(with: association.body) as? [String: Any])
            let details = try #require((json["applinks"] as? [String: Any])?["details"] as? [[String: Any]])
            #expect(details.count == 1)
            #expect(details.first?["appIDs"] as? [String] == ["ABCDE12345.app.zutto-nikki"])
            #expect((details.first?["components"] as? [[String: Any]])?.map { $0["/"] as? String } == ["/i/*"])
        }
        try await APIHarness.run { api in
            let association = try await api.call(.get, "/.well-known/apple-app-site-association")
            #expect(association.status == .notFound && association.code == "not_found")
        }
    }

    @Test("pages are limited per client address: over the limit 429 with Retry-After; a trusted proxy's X-Forwarded-For is another client; anyone else's is ignored")
    func limitedPerAddress() async throws {
        var page = Self.app
        page.pagesPerMinute = 3
        // Every request here comes from 127.0.0.1: trusted as a proxy in the first run only.
        try await APIHarness.run(testing: .live, invitePage: page, trustedProxies: try TrustedProxies(parsing: "127.0.0.1")) { api in
            for _ in 0..<3 { #expect(try await api.call(.get, "/i/0000000000").status == .notFound) }
            let refused = try await api.call(.get, "/i/0000000000")
            #expect(refused.status == .tooManyRequests && refused.code == "rate_limited")
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
            let forwarded: HTTPFields = [HTTPFields.Element.Name("X-Forwarded-For")!: "203.0.113.9"]
            #expect(try await api.call(.get, "/i/0000000000", headers: forwarded).status == .notFound)
        }
        try await APIHarness.run(testing: .live, invitePage: page) { api in
            for index in 0..<3 {
                let spoofed: HTTPFields = [HTTPFields.Element.Name("X-Forwarded-For")!: "198.51.100.\(index)"]
                let reply = try await api.call(.get, "/i/0000000000", headers: spoofed)
                #expect(reply.status == .notFound)
            }
            let spoofed: HTTPFields = [HTTPFields.Element.Name("X-Forwarded-For")!: "198.51.100.200"]
            let limited = try await api.call(.get, "/i/0000000000", headers: spoofed)
            #expect(limited.status == .tooManyRequests)
        }
    }

    @Test("in headless Chromium, on a phone's screen: the text as written, no console message, no request to another host, a screenshot kept; the preview tags are Open Graph's")
    func inABrowser() async throws {
        try await APIHarness.run(testing: .live, invitePage: Self.app) { api in
            let port = try #require(api.client.port)
            let aiko = try await api.signIn("aiko")
            let diary = try await api.createDiary("日記", type: .couple, token: aiko.accessToken)
            let output = ScratchCluster.packageRoot.appendingPathComponent(".build/test-output")
            for (code, name) in [(diary.inviteCode, "invite-page.png"), ("ZZZZZZZZZZ", "invite-page-invalid.png")] {
                let page = try await HeadlessChromium.visit(
                    URL(string: "http://127.0.0.1:\(port)/i/\(code)")!, screenshot: output.appendingPathComponent(name))
                print("invite page screenshot: \(page.screenshot.path)")
                #expect(page.consoleMessages.isEmpty, "\(page.consoleMessages)")
                #expect(!page.pageRequests.isEmpty && page.pageRequests.allSatisfy { $0.hasPrefix("http://127.0.0.1:\(port)/") }, "\(page.pageRequests)")
                #expect(try Data(contentsOf: page.screenshot).starts(with: [0x89, 0x50, 0x4E, 0x47]))
                let text = page.dom.replacingOccurrences(of: #"<[^>]+>"#, with: " ", options: .regularExpression)
                #expect(text.contains("ずっと日記") && text.contains("交換日記アプリです"))
                if code == diary.inviteCode {
                    #expect(text.contains("招待コード") && text.contains(diary.inviteCode) && text.contains("アプリで開く") && text.contains("App Storeで入手"))
                } else {
                    #expect(text.contains("この招待は無効になっています") && !text.contains("招待コード"))
                }
                try await Self.expectOpenGraph(in: page.dom, url: "http://127.0.0.1:0/i/\(code)", valid: code == diary.inviteCode, api)
            }
        }
    }

    /// The Open Graph protocol (ogp.me): the four required properties, each once, an absolute
    /// image this server serves as PNG at the size the tags state, and well-formed optional ones.
    static func expectOpenGraph(in dom: String, url: String, valid: Bool, _ api: APIHarness) async throws {
        var properties: [String: [String]] = [:]
        for tag in dom.matches(of: /<meta property="(og:[a-z_:]+)" content="([^"]*)">/) {
            properties[String(tag.1), default: []].append(String(tag.2).replacingOccurrences(of: "&amp;", with: "&"))
        }
        for required in ["og:title", "og:type", "og:image", "og:url"] {
            #expect(properties[required]?.count == 1, "\(required): \(properties[required] ?? [])")
        }
        #expect(properties["og:type"] == ["website"])
        #expect(properties["og:locale"]?.allSatisfy { $0.wholeMatch(of: /[a-z]{2}_[A-Z]{2}/) != nil } ?? false)
        if valid { #expect(properties["og:url"] == [url]) }
        let image = try #require(properties["og:image"]?.first.flatMap(URL.init(string:)))
        #expect(image.scheme == "http" && image.host == "127.0.0.1", "og:image must be absolute: \(image)")
        #expect(properties["og:image:type"] == ["image/png"])
        #expect(properties["og:image:width"] == ["1200"] && properties["og:image:height"] == ["630"])
        let served = try await api.call(.get, image.path)
        #expect(served.status == .ok && served.headers[.contentType] == "image/png")
    }

    /// What every invite page sends, whatever its code.
    static func expectPrivate(_ page: APIHarness.Reply) {
        #expect(page.headers[HTTPFields.Element.Name("X-Robots-Tag")!] == "noindex, nofollow")
        #expect(page.headers[.cacheControl] == "no-store")
        #expect(page.text.contains(#"<meta name="robots" content="noindex, nofollow">"#))
        let policy = page.headers[.contentSecurityPolicy] ?? ""
        #expect(policy.hasPrefix("default-src 'none'; img-src 'self'; style-src 'sha256-"))
        #expect(!policy.contains("unsafe") && !policy.contains("http") && !policy.contains("*"))
        #expect(!page.text.contains("<script") && !page.text.contains("https://fonts"))
    }
}
