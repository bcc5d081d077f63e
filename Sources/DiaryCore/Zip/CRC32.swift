package import NIOCore

// Written here because CompressNIO does not expose zlib's crc32.
/// The CRC-32 that ZIP, gzip and PNG use (IEEE 802.3: reflected polynomial 0xEDB88320,
/// initial value and final XOR 0xFFFFFFFF). Feed it bytes in any number of pieces and read
/// `value` at any point.
///
/// Photos of hundreds of megabytes pass through it, so it reads sixteen bytes per step
/// ("slicing-by-16"): sixteen 256-entry tables, 16 KiB together, which stay in the L1 cache.
package struct CRC32: Sendable {
    /// The running register, kept inverted as the algorithm wants it between pieces.
    private var register: UInt32 = 0xFFFF_FFFF

    package init() {}

    /// The checksum of every byte given so far.
    package var value: UInt32 { ~register }

    /// The checksum of `bytes` alone.
    package static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }

    package mutating func update(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { update($0) }
    }

    package mutating func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil {
            Array(bytes).withUnsafeBytes { update($0) }
        }
    }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var pointer = bytes.baseAddress, !bytes.isEmpty else { return }
        var remaining = bytes.count
        var crc = register
        crc32Tables.withUnsafeBufferPointer { tables in
            // `table(k)` is the table for a byte k positions before the end of the step.
            let t = tables.baseAddress!
            while remaining >= 16 {
                let low = UInt64(littleEndian: pointer.loadUnaligned(as: UInt64.self)) ^ UInt64(crc)
                let high = UInt64(littleEndian: pointer.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
                crc = t[15 &* 256 &+ Int(low & 0xFF)]
                    ^ t[14 &* 256 &+ Int((low &>> 8) & 0xFF)]
                    ^ t[13 &* 256 &+ Int((low &>> 16) & 0xFF)]
                    ^ t[12 &* 256 &+ Int((low &>> 24) & 0xFF)]
                    ^ t[11 &* 256 &+ Int((low &>> 32) & 0xFF)]
                    ^ t[10 &* 256 &+ Int((low &>> 40) & 0xFF)]
                    ^ t[9 &* 256 &+ Int((low &>> 48) & 0xFF)]
                    ^ t[8 &* 256 &+ Int(low &>> 56)]
                    ^ t[7 &* 256 &+ Int(high & 0xFF)]
                    ^ t[6 &* 256 &+ Int((high &>> 8) & 0xFF)]
                    ^ t[5 &* 256 &+ Int((high &>> 16) & 0xFF)]
                    ^ t[4 &* 256 &+ Int((high &>> 24) & 0xFF)]
                    ^ t[3 &* 256 &+ Int((high &>> 32) & 0xFF)]
                    ^ t[2 &* 256 &+ Int((high &>> 40) & 0xFF)]
                    ^ t[1 &* 256 &+ Int((high &>> 48) & 0xFF)]
                    ^ t[Int(high &>> 56)]
                pointer += 16
                remaining &-= 16
            }
            while remaining > 0 {
                crc = t[Int((crc ^ UInt32(pointer.load(as: UInt8.self))) & 0xFF)] ^ (crc &>> 8)
                pointer += 1
                remaining &-= 1
            }
        }
        register = crc
    }
}

/// Sixteen tables of 256 entries, one after another. Table 0 is the classic byte-at-a-time
/// table; table k gives a byte's contribution after k more zero bytes have passed.
private let crc32Tables: [UInt32] = {
    var tables = [UInt32](repeating: 0, count: 16 * 256)
    for byte in 0..<256 {
        var crc = UInt32(byte)
        for _ in 0..<8 {
            crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1
        }
        tables[byte] = crc
    }
    for k in 1..<16 {
        for byte in 0..<256 {
            let previous = tables[(k - 1) * 256 + byte]
            tables[k * 256 + byte] = (previous >> 8) ^ tables[Int(previous & 0xFF)]
        }
    }
    return tables
}()
