import Foundation
import Testing
@testable import S3Client

@Test func uriEncodeKeepsOnlyUnreservedCharacters() {
    #expect(SigV4.uriEncode("AZaz09-_.~", keepSlash: false) == "AZaz09-_.~")
    #expect(SigV4.uriEncode("a b", keepSlash: false) == "a%20b")           // never '+'
    #expect(SigV4.uriEncode("a+b=c&d", keepSlash: false) == "a%2Bb%3Dc%26d")
    #expect(SigV4.uriEncode("!'()*", keepSlash: false) == "%21%27%28%29%2A")
    #expect(SigV4.uriEncode("$", keepSlash: true) == "%24")                  // as in the PUT Object example
}

@Test func uriEncodeKeepsSlashOnlyInPaths() {
    #expect(SigV4.uriEncode("/photos/2024/a b.jpg", keepSlash: true) == "/photos/2024/a%20b.jpg")
    #expect(SigV4.uriEncode("a/b", keepSlash: false) == "a%2Fb")
}

@Test func uriEncodeWritesEachUTF8ByteInUpperCaseHex() {
    #expect(SigV4.uriEncode("日", keepSlash: false) == "%E6%97%A5")          // U+65E5 is E6 97 A5 in UTF-8
    #expect(SigV4.uriEncode("\u{1234}", keepSlash: true) == "%E1%88%B4")     // as in get-vanilla-utf8-query
    #expect(SigV4.uriEncode("é", keepSlash: false) == "%C3%A9")
}

@Test func encodedQueryStringSortsByEncodedNameThenValue() {
    #expect(SigV4.encodedQueryString([]) == "")
    #expect(SigV4.encodedQueryString([("b", "2"), ("a", "y"), ("a", "x")]) == "a=x&a=y&b=2")
    // Upper case sorts before lower case: by character code, not alphabetically.
    #expect(SigV4.encodedQueryString([("a", "1"), ("B", "2")]) == "B=2&a=1")
    #expect(SigV4.encodedQueryString([("key", "a b/c")]) == "key=a%20b%2Fc")
}

@Test func sha256HexOfEmptyInput() {
    #expect(SigV4.sha256Hex([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
}
