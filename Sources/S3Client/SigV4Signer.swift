import Crypto
public import Foundation

/// The keys a request is signed with.
public struct S3Credentials: Sendable, Equatable {
    public var accessKeyID: String
    public var secretAccessKey: String
    /// Temporary credentials carry a token; it travels as x-amz-security-token and is signed.
    public var sessionToken: String?

    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }
}

/// The encoding and hashing rules of AWS Signature Version 4.
public enum SigV4 {
    public static let algorithm = "AWS4-HMAC-SHA256"
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    public static func sha256Hex(_ bytes: some DataProtocol) -> String {
        hex(SHA256.hash(data: bytes))
    }

    /// RFC 3986 unreserved characters stay; every other UTF-8 byte becomes %XX in upper case.
    /// SigV4 forbids the looser encodings of URLComponents and form bodies ('+' for space, '~' escaped),
    /// so this is written out byte by byte. `keepSlash` is for paths, where '/' separates segments.
    public static func uriEncode(_ text: String, keepSlash: Bool) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepSlash:
                out.append("/")
            default:
                out.append("%")
                out.unicodeScalars.append(upperHexDigits[Int(byte >> 4)])
                out.unicodeScalars.append(upperHexDigits[Int(byte & 0x0F)])
            }
        }
        return out
    }

    /// Encodes every name and value, then sorts by encoded name and, for repeated names, by encoded value.
    /// The comparison is on bytes because SigV4 sorts by character code, not by locale.
    public static func encodedQueryString(_ items: [(String, String)]) -> String {
        items
            .map { (uriEncode($0.0, keepSlash: false), uriEncode($0.1, keepSlash: false)) }
            .sorted { lhs, rhs in
                lhs.0 != rhs.0 ? bytewiseLess(lhs.0, rhs.0) : bytewiseLess(lhs.1, rhs.1)
            }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    static func bytewiseLess(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }

    private static let upperHexDigits = Array("0123456789ABCDEF".unicodeScalars)
    private static let lowerHexDigits = Array("0123456789abcdef".unicodeScalars)

    /// Signatures and hashes are written in lower-case hex.
    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var out = ""
        for byte in bytes {
            out.unicodeScalars.append(lowerHexDigits[Int(byte >> 4)])
            out.unicodeScalars.append(lowerHexDigits[Int(byte & 0x0F)])
        }
        return out
    }

    static func hmac(_ key: some ContiguousBytes, _ message: String) -> HashedAuthenticationCode<SHA256> {
        HMAC<SHA256>.authenticationCode(for: Array(message.utf8), using: SymmetricKey(data: key))
    }
}

/// Signs S3 requests with AWS Signature Version 4, either as headers or as a presigned URL's query.
public struct SigV4Signer: Sendable {
    public let credentials: S3Credentials
    public let region: String
    public let service: String

    public init(credentials: S3Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// The headers to add to a request: x-amz-date, x-amz-content-sha256 (= payloadHash),
    /// x-amz-security-token if any, and Authorization. `headers` are the request's other headers that
    /// must be signed (at least host). `path` is already percent-encoded as sent; `query` is unencoded.
    public func signedHeaders(method: String, path: String, query: [(String, String)], headers: [(String, String)],
                              payloadHash: String, date: Date) -> [(String, String)] {
        var added = [("x-amz-date", Stamp(date).dateTime), ("x-amz-content-sha256", payloadHash)]
        if let token = credentials.sessionToken {
            added.append(("x-amz-security-token", token))
        }
        // The signer's own values win over any copy the caller passed, so a header is never signed twice.
        let ownNames = Set(added.map(\.0) + ["authorization"])
        let signed = headers.filter { !ownNames.contains($0.0.lowercased()) } + added

        let request = canonicalRequest(method: method, path: path, query: query, headers: signed,
                                       payloadHash: payloadHash)
        let signature = signature(stringToSign: stringToSign(canonicalRequest: request, date: date), date: date)
        let authorization = "\(SigV4.algorithm) Credential=\(credentials.accessKeyID)/\(scope(date)), "
            + "SignedHeaders=\(Self.canonicalHeaders(signed).names), Signature=\(signature)"
        return added + [("Authorization", authorization)]
    }

    /// A presigned URL's query items: the caller's `query` followed by X-Amz-Algorithm, X-Amz-Credential,
    /// X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders=host, X-Amz-Security-Token if any, and X-Amz-Signature.
    /// The payload is UNSIGNED-PAYLOAD because whoever uses the URL chooses the body. `expires` is in seconds
    /// (S3 accepts 1 to 604800).
    public func presignedQuery(method: String, path: String, query: [(String, String)], host: String,
                               expires: Int, date: Date) -> [(String, String)] {
        var items = query + [
            ("X-Amz-Algorithm", SigV4.algorithm),
            ("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(date))"),
            ("X-Amz-Date", Stamp(date).dateTime),
            ("X-Amz-Expires", String(expires)),
            ("X-Amz-SignedHeaders", "host"),
        ]
        if let token = credentials.sessionToken {
            items.append(("X-Amz-Security-Token", token))
        }
        let request = canonicalRequest(method: method, path: path, query: items, headers: [("host", host)],
                                       payloadHash: SigV4.unsignedPayload)
        let signature = signature(stringToSign: stringToSign(canonicalRequest: request, date: date), date: date)
        return items + [("X-Amz-Signature", signature)]
    }

    // MARK: The steps of the signature, exposed for tests

    /// Method, path, canonical query, canonical headers, signed header names and payload hash, one a line.
    /// Every header in `headers` is signed.
    public func canonicalRequest(method: String, path: String, query: [(String, String)],
                                 headers: [(String, String)], payloadHash: String) -> String {
        let canonical = Self.canonicalHeaders(headers)
        return [method, path.isEmpty ? "/" : path, SigV4.encodedQueryString(query),
                canonical.lines, canonical.names, payloadHash].joined(separator: "\n")
    }

    public func stringToSign(canonicalRequest: String, date: Date) -> String {
        [SigV4.algorithm, Stamp(date).dateTime, scope(date), SigV4.sha256Hex(Array(canonicalRequest.utf8))]
            .joined(separator: "\n")
    }

    /// HMAC of the string to sign with a key derived from the secret, day, region and service,
    /// so a leaked key is good for one day, region and service only.
    public func signature(stringToSign: String, date: Date) -> String {
        let kDate = SigV4.hmac(Array("AWS4\(credentials.secretAccessKey)".utf8), Stamp(date).day)
        let kRegion = SigV4.hmac(kDate, region)
        let kService = SigV4.hmac(kRegion, service)
        let kSigning = SigV4.hmac(kService, "aws4_request")
        return SigV4.hex(SigV4.hmac(kSigning, stringToSign))
    }

    func scope(_ date: Date) -> String {
        "\(Stamp(date).day)/\(region)/\(service)/aws4_request"
    }

    /// Lower-cased names sorted by byte; values trimmed with inner runs of spaces folded to one;
    /// repeated names joined with ',' in the order given. Each line ends in "\n", so the block
    /// is followed by an empty line in the canonical request.
    static func canonicalHeaders(_ headers: [(String, String)]) -> (lines: String, names: String) {
        var values: [String: [String]] = [:]
        for (name, value) in headers {
            values[name.lowercased(), default: []].append(normalize(value))
        }
        let names = values.keys.sorted(by: SigV4.bytewiseLess)
        let lines = names.map { "\($0):\(values[$0]!.joined(separator: ","))\n" }.joined()
        return (lines, names.joined(separator: ";"))
    }

    static func normalize(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }
}

/// A date as SigV4 writes it, always in UTC: "yyyyMMdd'T'HHmmss'Z'" and its first eight characters.
struct Stamp {
    let dateTime: String
    var day: String { String(dateTime.prefix(8)) }

    init(_ date: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func pad(_ n: Int?, _ width: Int) -> String {
            let s = String(n ?? 0)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        dateTime = pad(c.year, 4) + pad(c.month, 2) + pad(c.day, 2) + "T"
            + pad(c.hour, 2) + pad(c.minute, 2) + pad(c.second, 2) + "Z"
    }
}
