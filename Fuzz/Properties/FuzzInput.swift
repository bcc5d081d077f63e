/// The fuzzer's bytes read front to back as the values a target needs: a selector, a length,
/// a run of bytes. Reads past the end give zeros and empty runs, so every input is usable.
struct FuzzInput {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var isEmpty: Bool { position >= bytes.count }

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    /// The next `count` bytes, or as many as are left.
    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, position + max(0, count))
        defer { position = max(position, end) }
        return position < end ? Array(bytes[position..<end]) : []
    }

    /// Everything not read yet.
    mutating func rest() -> [UInt8] {
        take(bytes.count - position)
    }
}
