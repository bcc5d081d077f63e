package import PostgresClient

extension PostgresRow {
    /// An `array_agg` column, one of several aggregated from the same rows: NULL (no rows)
    /// is empty, and `count`, when given, is the length its siblings already have.
    package func decodeAggregate<Element: PostgresArrayElementDecodable>(_ name: String, as type: Element.Type = Element.self, count: Int? = nil) throws -> [Element] {
        let elements = try decode(name, as: [Element]?.self) ?? []
        if let count, elements.count != count {
            throw PostgresDecodingError(column: name, targetType: "[\(Element.self)]", failure: .malformed("\(elements.count) elements where its sibling arrays have \(count)"))
        }
        return elements
    }
}
