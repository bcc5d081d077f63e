import Foundation
import Testing
@testable import S3Client

// Cases from AWS's Signature Version 4 test suite: credential scope AKIDEXAMPLE/20150830/us-east-1/service,
// secret wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY, 20150830T123600Z.
// get-vanilla-query-order-key-case is printed on https://docs.aws.amazon.com/general/latest/gr/signature-v4-test-suite.html;
// the other expected values are the files of the same suite as AWS keeps it in awslabs/aws-c-auth,
// tests/aws-signing-test-suite/v4/<case>/header-{canonical-request,string-to-sign,signature}.txt.
// These services are not S3 and normalise paths, so only cases whose path needs no normalisation are used.

private let suiteSigner = SigV4Signer(
    credentials: S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
    region: "us-east-1", service: "service")
private let suiteDate = Date(timeIntervalSince1970: 1_440_938_160) // 20150830T123600Z
private let emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct SuiteCase: Sendable, CustomTestStringConvertible {
    let name: String
    let method: String
    let path: String
    let query: [(String, String)]
    let headers: [(String, String)]
    let canonicalRequest: String
    let stringToSignHash: String
    let signature: String
    var testDescription: String { name }
}

private let suiteCases: [SuiteCase] = [
    SuiteCase(name: "get-vanilla", method: "GET", path: "/", query: [],
              headers: [("Host", "example.amazonaws.com")],
              canonicalRequest: """
                GET
                /

                host:example.amazonaws.com
                x-amz-date:20150830T123600Z

                host;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """,
              stringToSignHash: "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63",
              signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    SuiteCase(name: "get-vanilla-query-order-key-case", method: "GET", path: "/",
              query: [("Param2", "value2"), ("Param1", "value1")],
              headers: [("Host", "example.amazonaws.com")],
              canonicalRequest: """
                GET
                /
                Param1=value1&Param2=value2
                host:example.amazonaws.com
                x-amz-date:20150830T123600Z

                host;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """,
              stringToSignHash: "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0",
              signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
    SuiteCase(name: "get-vanilla-query-order-encoded", method: "GET", path: "/",
              query: [("Param-3", "Value3"), ("Param", "Value2"), ("\u{1234}", "Value1")],
              headers: [("Host", "example.amazonaws.com")],
              canonicalRequest: """
                GET
                /
                %E1%88%B4=Value1&Param=Value2&Param-3=Value3
                host:example.amazonaws.com
                x-amz-date:20150830T123600Z

                host;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """,
              stringToSignHash: "868294f5c38bd141c4972a373a76654f1418a8e4fc18b2e7903ae45e8ae0ec71",
              signature: "371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac"),
    SuiteCase(name: "get-vanilla-utf8-query", method: "GET", path: "/", query: [("\u{1234}", "bar")],
              headers: [("Host", "example.amazonaws.com")],
              canonicalRequest: """
                GET
                /
                %E1%88%B4=bar
                host:example.amazonaws.com
                x-amz-date:20150830T123600Z

                host;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """,
              stringToSignHash: "eb30c5bed55734080471a834cc727ae56beb50e5f39d1bff6d0d38cb192a7073",
              signature: "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"),
    SuiteCase(name: "get-header-value-trim", method: "GET", path: "/", query: [],
              headers: [("Host", "example.amazonaws.com"), ("My-Header1", " value1"), ("My-Header2", " \"a   b   c\"")],
              canonicalRequest: """
                GET
                /

                host:example.amazonaws.com
                my-header1:value1
                my-header2:"a b c"
                x-amz-date:20150830T123600Z

                host;my-header1;my-header2;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """,
              stringToSignHash: "a726db9b0df21c14f559d0a978e563112acb1b9e05476f0a6a1c7d68f28605c7",
              signature: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"),
    SuiteCase(name: "get-header-value-order", method: "GET", path: "/", query: [],
              headers: [("Host", "example.amazonaws.com"), ("My-Header1", "value4"), ("My-Header1", "value1"),
                        ("My-Header1", "value3"), ("My-Header1", "value2")],
              canonicalRequest: """
                GET
                /

                host:example.amazonaws.com
                my-header1:value4,value1,value3,value2
                x-amz-date:20150830T123600Z

                host;my-header1;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """,
              stringToSignHash: "31ce73cd3f3d9f66977ad3dd957dc47af14df92fcd8509f59b349e9137c58b86",
              signature: "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"),
    SuiteCase(name: "get-unreserved", method: "GET",
              path: "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", query: [],
              headers: [("Host", "example.amazonaws.com")],
              canonicalRequest: """
                GET
                /-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz

                host:example.amazonaws.com
                x-amz-date:20150830T123600Z

                host;x-amz-date
                e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
                """,
              stringToSignHash: "6a968768eefaa713e2a6b16b589a8ea192661f098f37349f4e2c0082757446f9",
              signature: "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"),
]

/// These services sign no x-amz-content-sha256, so the steps are checked one by one with x-amz-date
/// passed in as the suite's signed request carries it.
@Test(arguments: suiteCases)
func signatureVersion4TestSuite(_ c: SuiteCase) {
    let canonical = suiteSigner.canonicalRequest(method: c.method, path: c.path, query: c.query,
                                                 headers: c.headers + [("X-Amz-Date", "20150830T123600Z")],
                                                 payloadHash: emptyHash)
    #expect(canonical == c.canonicalRequest)
    let stringToSign = suiteSigner.stringToSign(canonicalRequest: canonical, date: suiteDate)
    #expect(stringToSign == "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
        + c.stringToSignHash)
    #expect(suiteSigner.signature(stringToSign: stringToSign, date: suiteDate) == c.signature)
}

/// In the aws-c-auth copy of the suite this case signs its body into x-amz-content-sha256,
/// exactly the shape signedHeaders produces, so the public entry point is checked end to end.
@Test func postXWWWFormURLEncodedThroughSignedHeaders() {
    let payloadHash = SigV4.sha256Hex(Array("Param1=value1".utf8))
    #expect(payloadHash == "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e")
    let signed = suiteSigner.signedHeaders(
        method: "POST", path: "/", query: [],
        headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Host", "example.amazonaws.com"),
                  ("Content-Length", "13")],
        payloadHash: payloadHash, date: suiteDate)
    #expect(signed.first { $0.0 == "Authorization" }?.1 ==
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=content-length;content-type;host;x-amz-content-sha256;x-amz-date, Signature=d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b")
}

@Test func sessionTokenCanonicalRequest() {
    // get-vanilla-with-session-token: the token is a signed header like any other.
    let token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
    let canonical = suiteSigner.canonicalRequest(
        method: "GET", path: "/", query: [],
        headers: [("Host", "example.amazonaws.com"), ("X-Amz-Date", "20150830T123600Z"),
                  ("X-Amz-Security-Token", token)],
        payloadHash: emptyHash)
    let stringToSign = suiteSigner.stringToSign(canonicalRequest: canonical, date: suiteDate)
    #expect(stringToSign.hasSuffix("\n067b36aa60031588cea4a4cde1f21215227a047690c72247f1d70b32fbbfad2b"))
    #expect(suiteSigner.signature(stringToSign: stringToSign, date: suiteDate)
        == "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8")
}
