import DiaryCore
import DiaryModels
import Foundation
import Hummingbird
@testable import DiaryHTTP

extension FuzzTarget {
    /// A JSON body as the API reads it: the duplicate-key scan finds the key the reference
    /// finds from each object's parsed keys, and decoding ends in a value or a 400
    /// (`validation_failed`, `read_only_field`), never another error; a body nested past
    /// `APIRequestDecoder.maximumNesting` is a 400 before any parser recurses into it.
    static func checkJSONBody(_ bytes: [UInt8]) throws(PropertyViolation) {
        let data = Data(bytes)
        let found = JSONDuplicateKeys.first(in: data)
        let nesting = JSONDuplicateKeys.nesting(of: data)
        if nesting <= APIRequestDecoder.maximumNesting, (try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)) != nil {
            let expected = JSONKeyReference.firstRepeatedKey(in: bytes)
            try require(found == expected, "the scan finds \(found.map { "\"\($0)\"" } ?? "no repeated key"), the reference \(expected.map { "\"\($0)\"" } ?? "none")")
        }
        do {
            _ = try APIRequestDecoder.decode(CreateEntryRequest.self, from: data)
            try require(nesting <= APIRequestDecoder.maximumNesting, "a body nested \(nesting) deep is accepted")
        } catch let problem as Problem {
            try require(
                problem.status == .badRequest && [.validationFailed, .readOnlyField].contains(problem.code),
                "the body is refused with \(problem.status.code) \(problem.code.rawValue), not a 400"
            )
        } catch {
            throw PropertyViolation("decoding the body throws \(error), which the API would answer with a 500")
        }
    }
}
