import Foundation
import Testing
@testable import S3Client

// Every expected value below is copied from AWS's published examples, never produced by this code.
//
// Header examples: "Signature Calculations for the Authorization Header: Transferring Payload in a
// Single Chunk (AWS Signature Version 4)", https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html
// (the search tool returned only the page's opening; the example section was read from a verbatim copy,
// ForeverPyrite/r2client aws_sigv4/examples.md, and its signatures agree with many independent test suites).
//
// Presigned example: "Authenticating Requests: Using Query Parameters (AWS Signature Version 4)",
// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html

private let docCredentials = S3Credentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                                           secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
private let docSigner = SigV4Signer(credentials: docCredentials, region: "us-east-1")
private let docDate = Date(timeIntervalSince1970: 1_369_353_600) // 20130524T000000Z
private let docHost = "examplebucket.s3.amazonaws.com"
private let emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

private func value(_ name: String, in headers: [(String, String)]) -> String? {
    headers.first { $0.0.lowercased() == name.lowercased() }?.1
}

/// The S3 page prints the Authorization header with "," between its parts; this signer writes ", "
/// as the general SigV4 documentation and test suite do. S3 accepts both.
private func withoutSpaceAfterComma(_ text: String?) -> String? {
    text?.replacingOccurrences(of: ", ", with: ",")
}

@Test func getObjectCanonicalRequestStringToSignAndSignature() {
    let headers = [("Host", docHost), ("Range", "bytes=0-9")]
    let signed = docSigner.signedHeaders(method: "GET", path: "/test.txt", query: [], headers: headers,
                                         payloadHash: emptyHash, date: docDate)

    let canonical = docSigner.canonicalRequest(
        method: "GET", path: "/test.txt", query: [],
        headers: headers + [("x-amz-date", "20130524T000000Z"), ("x-amz-content-sha256", emptyHash)],
        payloadHash: emptyHash)
    #expect(canonical == """
        GET
        /test.txt

        host:examplebucket.s3.amazonaws.com
        range:bytes=0-9
        x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
        x-amz-date:20130524T000000Z

        host;range;x-amz-content-sha256;x-amz-date
        e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
        """)
    let stringToSign = docSigner.stringToSign(canonicalRequest: canonical, date: docDate)
    #expect(stringToSign == """
        AWS4-HMAC-SHA256
        20130524T000000Z
        20130524/us-east-1/s3/aws4_request
        7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972
        """)
    #expect(docSigner.signature(stringToSign: stringToSign, date: docDate)
        == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")

    #expect(value("x-amz-date", in: signed) == "20130524T000000Z")
    #expect(value("x-amz-content-sha256", in: signed) == emptyHash)
    #expect(value("x-amz-security-token", in: signed) == nil)
    #expect(withoutSpaceAfterComma(value("Authorization", in: signed)) ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
}

@Test func putObjectWithDateAndStorageClass() {
    let payloadHash = SigV4.sha256Hex(Array("Welcome to Amazon S3.".utf8))
    #expect(payloadHash == "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
    let path = SigV4.uriEncode("/test$file.text", keepSlash: true)
    #expect(path == "/test%24file.text")

    let headers = [("Host", docHost), ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
                   ("x-amz-storage-class", "REDUCED_REDUNDANCY")]
    let canonical = docSigner.canonicalRequest(
        method: "PUT", path: path, query: [],
        headers: headers + [("x-amz-date", "20130524T000000Z"), ("x-amz-content-sha256", payloadHash)],
        payloadHash: payloadHash)
    #expect(canonical == """
        PUT
        /test%24file.text

        date:Fri, 24 May 2013 00:00:00 GMT
        host:examplebucket.s3.amazonaws.com
        x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072
        x-amz-date:20130524T000000Z
        x-amz-storage-class:REDUCED_REDUNDANCY

        date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class
        44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072
        """)
    #expect(docSigner.stringToSign(canonicalRequest: canonical, date: docDate) == """
        AWS4-HMAC-SHA256
        20130524T000000Z
        20130524/us-east-1/s3/aws4_request
        9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d
        """)

    let signed = docSigner.signedHeaders(method: "PUT", path: path, query: [], headers: headers,
                                         payloadHash: payloadHash, date: docDate)
    #expect(withoutSpaceAfterComma(value("Authorization", in: signed)) ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
}

@Test func getBucketLifecycle() {
    let canonical = docSigner.canonicalRequest(
        method: "GET", path: "/", query: [("lifecycle", "")],
        headers: [("Host", docHost), ("x-amz-date", "20130524T000000Z"), ("x-amz-content-sha256", emptyHash)],
        payloadHash: emptyHash)
    #expect(canonical == """
        GET
        /
        lifecycle=
        host:examplebucket.s3.amazonaws.com
        x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
        x-amz-date:20130524T000000Z

        host;x-amz-content-sha256;x-amz-date
        e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
        """)
    #expect(docSigner.stringToSign(canonicalRequest: canonical, date: docDate).hasSuffix(
        "\n9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca"))

    let signed = docSigner.signedHeaders(method: "GET", path: "/", query: [("lifecycle", "")],
                                         headers: [("Host", docHost)], payloadHash: emptyHash, date: docDate)
    #expect(withoutSpaceAfterComma(value("Authorization", in: signed)) ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
}

@Test func getBucketListObjects() {
    // Given out of order on purpose: the signer sorts, so the result must match "?max-keys=2&prefix=J".
    let query = [("prefix", "J"), ("max-keys", "2")]
    #expect(SigV4.encodedQueryString(query) == "max-keys=2&prefix=J")
    let canonical = docSigner.canonicalRequest(
        method: "GET", path: "/", query: query,
        headers: [("Host", docHost), ("x-amz-date", "20130524T000000Z"), ("x-amz-content-sha256", emptyHash)],
        payloadHash: emptyHash)
    #expect(docSigner.stringToSign(canonicalRequest: canonical, date: docDate).hasSuffix(
        "\ndf57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7"))

    let signed = docSigner.signedHeaders(method: "GET", path: "/", query: query, headers: [("Host", docHost)],
                                         payloadHash: emptyHash, date: docDate)
    #expect(withoutSpaceAfterComma(value("Authorization", in: signed)) ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
}

@Test func presignedGetObject() {
    let items = docSigner.presignedQuery(method: "GET", path: "/test.txt", query: [], host: docHost,
                                         expires: 86400, date: docDate)
    // The page's URL lists the items in this order, X-Amz-Signature last, so they are joined as returned.
    let queryString = items
        .map { "\(SigV4.uriEncode($0.0, keepSlash: false))=\(SigV4.uriEncode($0.1, keepSlash: false))" }
        .joined(separator: "&")
    #expect(queryString == "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")

    let canonical = docSigner.canonicalRequest(method: "GET", path: "/test.txt", query: Array(items.dropLast()),
                                               headers: [("host", docHost)], payloadHash: SigV4.unsignedPayload)
    #expect(canonical == """
        GET
        /test.txt
        X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host
        host:examplebucket.s3.amazonaws.com

        host
        UNSIGNED-PAYLOAD
        """)
    #expect(docSigner.stringToSign(canonicalRequest: canonical, date: docDate) == """
        AWS4-HMAC-SHA256
        20130524T000000Z
        20130524/us-east-1/s3/aws4_request
        3bfa292879f6447bbcda7001decf97f4a54dc650c8942174ae0a9121cf58ad04
        """)
}

@Test func sessionTokenIsAddedAndSigned() {
    // No AWS S3 example uses a token; this checks only where the token goes, not a published signature.
    let signer = SigV4Signer(credentials: S3Credentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                                                        secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                                        sessionToken: "TOKEN/+="),
                             region: "us-east-1")
    let signed = signer.signedHeaders(method: "GET", path: "/test.txt", query: [], headers: [("Host", docHost)],
                                      payloadHash: emptyHash, date: docDate)
    #expect(value("x-amz-security-token", in: signed) == "TOKEN/+=")
    #expect(value("Authorization", in: signed)?
        .contains("SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") == true)

    let items = signer.presignedQuery(method: "GET", path: "/test.txt", query: [], host: docHost,
                                      expires: 60, date: docDate)
    #expect(items.map(\.0) == ["X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
                               "X-Amz-SignedHeaders", "X-Amz-Security-Token", "X-Amz-Signature"])
    #expect(items.first { $0.0 == "X-Amz-Security-Token" }?.1 == "TOKEN/+=")
}
