import Crypto
import DiaryCore
import Foundation

/// The page an invite link opens in a browser (`GET /i/<code>`): small, in Japanese, for a
/// phone. It names the app and nothing of the diary or who sent the link, since a link that
/// leaks travels further than its recipient. A current code is shown large, to type by hand,
/// with a button that opens the app by its URL scheme (a Universal Link tapped on a page of
/// its own domain stays in the browser) and one to the App Store; any other code gets the
/// same page saying the invitation is no longer valid, with no code.
///
/// Everything it needs is inline or on this server: one stylesheet, allowed by its hash in
/// the Content-Security-Policy, and no script at all.
struct InvitePage {
    let links: InviteLinks
    let configuration: InvitePageConfiguration

    static let title = "ずっと日記への招待"
    static let description = "ふたりや家族、友だちと続ける交換日記アプリ「ずっと日記」に招待されています。"
    static let previewPath = "/invite-preview.png"

    /// The page for a current code, or for a code that opens nothing (nil).
    func html(code: String?) -> String {
        let escape = ExportBook.escape
        let pageURL = code.map { links.url(for: $0) } ?? links.publicURL + "/"
        let body: String
        if let code {
            let open = "\(configuration.appURLScheme)://join?code=\(code)"
            body = """
                <p class="lead">交換日記に招待されています。</p>
                <p class="label">招待コード</p>
                <p class="code" id="code">\(escape(code))</p>
                <a class="button primary" href="\(escape(open))">アプリで開く</a>
                <a class="button" href="\(escape(configuration.appStoreURL.absoluteString))">App Storeで入手</a>
                <p class="note">アプリをインストールしたら、もう一度このリンクを開くか、招待コードを入力してください。</p>
            """
        } else {
            body = """
                <p class="lead" id="invalid">この招待は無効になっています。</p>
                <p class="note">招待してくれた人に、新しい招待リンクを送ってもらってください。</p>
                <a class="button" href="\(escape(configuration.appStoreURL.absoluteString))">App Storeで入手</a>
            """
        }
        return """
            <!doctype html>
            <html lang="ja">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="robots" content="noindex, nofollow">
            <meta name="referrer" content="no-referrer">
            <title>\(Self.title)</title>
            <meta name="description" content="\(Self.description)">
            <meta property="og:title" content="\(Self.title)">
            <meta property="og:description" content="\(Self.description)">
            <meta property="og:type" content="website">
            <meta property="og:url" content="\(escape(pageURL))">
            <meta property="og:site_name" content="ずっと日記">
            <meta property="og:locale" content="ja_JP">
            <meta property="og:image" content="\(escape(links.publicURL + Self.previewPath))">
            <meta property="og:image:type" content="image/png">
            <meta property="og:image:width" content="\(InvitePreviewImage.width)">
            <meta property="og:image:height" content="\(InvitePreviewImage.height)">
            <meta property="og:image:alt" content="ずっと日記 交換日記に招待されています">
            <meta name="twitter:card" content="summary_large_image">
            <style>\(Self.style)</style>
            </head>
            <body>
            <main>
            <h1>ずっと日記</h1>
            <p class="about">ふたりや家族、友だちと続ける交換日記アプリです。</p>
            \(body)
            </main>
            </body>
            </html>

            """
    }

    static let style = """
        body{margin:0;background:#fbf3e8;color:#5a3d2b;font-family:-apple-system,"Hiragino Sans","Noto Sans CJK JP",sans-serif;line-height:1.6}\
        main{max-width:28rem;margin:0 auto;padding:2.5rem 1.25rem;text-align:center}\
        h1{font-size:2rem;margin:0 0 .25rem;letter-spacing:.1em}\
        .about{margin:0 0 2rem;color:#8a6a55;font-size:.95rem}\
        .lead{font-size:1.15rem;font-weight:bold}\
        .label{margin:1.5rem 0 .25rem;color:#8a6a55;font-size:.9rem}\
        .code{margin:0 0 2rem;font-family:ui-monospace,Menlo,monospace;font-size:2.2rem;letter-spacing:.15em;font-weight:bold;word-break:break-all;-webkit-user-select:all;user-select:all}\
        .button{display:block;margin:.75rem 0;padding:.9rem;border-radius:.75rem;border:2px solid #e8836b;color:#c55a42;text-decoration:none;font-weight:bold}\
        .primary{background:#e8836b;color:#fff}\
        .note{color:#8a6a55;font-size:.85rem;margin-top:1.5rem}
        """

    /// Nothing but this server's images and the one stylesheet above; no script, no frame,
    /// no form, no base.
    static let contentSecurityPolicy: String = {
        let hash = Data(SHA256.hash(data: Data(style.utf8))).base64EncodedString()
        return "default-src 'none'; img-src 'self'; style-src 'sha256-\(hash)'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }()

    static let previewPNG = Data(base64Encoded: InvitePreviewImage.base64, options: .ignoreUnknownCharacters)!
}
