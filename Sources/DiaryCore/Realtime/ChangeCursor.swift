package import Foundation

/// Where a reader of the change log stands: for each diary, the position of the last change
/// it got there (migration 0027). Each diary orders its own changes, so a cursor names a
/// position for each; a diary it does not name starts where the caller joined it.
///
/// Clients see it as an opaque string: base64url of a version byte, then for each diary its
/// 16 id bytes and the position as an unsigned LEB128. `ChangeCursor(text)` is nil for
/// anything this server could not have written.
package struct ChangeCursor: Sendable, Hashable, CustomStringConvertible {
    package private(set) var positions: [UUID: Int64]

    package init(positions: [UUID: Int64] = [:]) {
        self.positions = positions
    }

    /// More than a user's diaries (`diaries_per_user_cap`, 100), for the diaries they have
    /// left whose departure is still to be told.
    package static let maximumDiaries = 128
    /// The longest text a cursor may be: the version byte and 128 diaries of at most 25
    /// bytes, in base64url. Longer input is refused before it is parsed.
    package static let maximumLength = 4268
    static let version: UInt8 = 2

    /// Whether `text` could be a cursor at all (base64url, at most `maximumLength`): what is
    /// not is a malformed request (400), while a well-formed one we do not know, empty
    /// included, asks for a resync (410).
    package static func isWellFormed(_ text: some StringProtocol) -> Bool {
        text.utf8.count <= maximumLength && Base64URL.usesAlphabetOnly(text)
    }

    package init?(_ text: String) {
        guard text.utf8.count <= Self.maximumLength, let data = Base64URL.decode(text) else { return nil }
        var bytes = data[...]
        guard bytes.popFirst() == Self.version else { return nil }
        var positions: [UUID: Int64] = [:]
        while !bytes.isEmpty {
            guard bytes.count > 16, positions.count < Self.maximumDiaries else { return nil }
            let id = bytes.prefix(16).withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
            bytes = bytes.dropFirst(16)
            guard let position = Self.readLEB128(&bytes), positions.updateValue(position, forKey: id) == nil else { return nil }
        }
        self.positions = positions
    }

    package var encoded: String {
        var bytes: [UInt8] = [Self.version]
        for (id, position) in positions.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            withUnsafeBytes(of: id.uuid) { bytes.append(contentsOf: $0) }
            var rest = UInt64(position)
            repeat {
                let low = UInt8(rest & 0x7f)
                rest >>= 7
                bytes.append(rest == 0 ? low : low | 0x80)
            } while rest != 0
        }
        return Base64URL.encode(Data(bytes))
    }

    package var description: String {
        positions.sorted(by: { $0.key.uuidString < $1.key.uuidString }).map { "\($0.key):\($0.value)" }.joined(separator: ",")
    }

    package subscript(diary: UUID) -> Int64? {
        get { positions[diary] }
        set { positions[diary] = newValue }
    }

    /// A non-negative Int64 in at most 9 bytes, the last without its high bit; nil for
    /// anything else, an over-long encoding included.
    static func readLEB128(_ bytes: inout Data.SubSequence) -> Int64? {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 63, by: 7) {
            guard let byte = bytes.popFirst() else { return nil }
            value |= UInt64(byte & 0x7f) << UInt64(shift)
            if byte & 0x80 == 0 {
                guard byte != 0 || shift == 0 else { return nil }
                return value <= UInt64(Int64.max) ? Int64(value) : nil
            }
        }
        return nil
    }
}
