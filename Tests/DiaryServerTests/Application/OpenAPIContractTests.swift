import Foundation
import Testing
@testable import DiaryHTTP

/// What generated clients (DiaryKit among them) rely on in openapi.yaml, held to the server:
/// a stable `operationId` on every operation, and `X-App-Version` with its 426 declared on
/// exactly the routes `ServiceStatusMiddleware` checks the version on.
@Suite("OpenAPI contract for clients")
struct OpenAPIContractTests {
    struct Operation {
        var path: String
        var method: String
        var lines: [Substring]
        var operationID: String? {
            lines.first { $0.hasPrefix("      operationId: ") }.map { String($0.dropFirst("      operationId: ".count)) }
        }
    }

    /// Each operation with its own lines, read as the 405 table's test reads the paths.
    static var operations: [Operation] {
        var operations: [Operation] = []
        var path: String?
        for line in OpenAPIDocument.text(file: nil).split(separator: "\n") {
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast())
            } else if let current = path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":"), !line.contains("parameters") {
                operations.append(Operation(path: current, method: String(line.trimmingCharacters(in: .whitespaces).dropLast()), lines: []))
            } else if path != nil, line.hasPrefix("      "), !operations.isEmpty {
                operations[operations.count - 1].lines.append(line)
            } else if !line.hasPrefix(" ") {
                path = nil
            }
        }
        return operations
    }

    @Test("every operation has an operationId, unique and in lowerCamelCase")
    func operationIDs() {
        let operations = Self.operations
        #expect(operations.count >= 43)
        let ids = operations.compactMap(\.operationID)
        #expect(ids.count == operations.count, "without one: \(operations.filter { $0.operationID == nil }.map { "\($0.method) \($0.path)" })")
        #expect(Set(ids).count == ids.count, "repeated: \(ids.filter { id in ids.filter { $0 == id }.count > 1 })")
        for id in ids {
            #expect(id.first?.isLowercase == true && id.allSatisfy { $0.isLetter || $0.isNumber }, "\(id)")
        }
    }

    @Test("X-App-Version and 426 are declared where the server checks the version, and only there")
    func appVersionDeclared() {
        for operation in Self.operations where operation.path.hasPrefix("/v1/") && operation.method != "head" {
            let concrete = operation.path.replacingOccurrences(of: #"\{[^}]+\}"#, with: "x", options: .regularExpression)
            let route = ServiceStatusRoute(path: concrete)
            // The webhooks are checked too, but no app calls them: the contract leaves them out.
            let expected = !route.ignoresVersion && !route.isWebhook
            let declaresHeader = operation.lines.contains { $0.contains("#/components/parameters/appVersion") }
            let declares426 = operation.lines.contains { $0.hasPrefix("        '426'") }
            #expect(declaresHeader == expected, "\(operation.method) \(operation.path): X-App-Version")
            #expect(declares426 == expected, "\(operation.method) \(operation.path): 426")
        }
    }
}
