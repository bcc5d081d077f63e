package import PostgresClient

/// Every photo file the database names: each content hash once, with its size, from uploads
/// and attached photos alike, in hash order, a page per round trip. For the schema owner's
/// maintenance (`PhotoChecksumBackfill`, `PhotoStoreCopy`), which go through all of them.
enum PhotoHashes {
    /// `condition` narrows the rows of both tables (such as those without a checksum).
    static func forEach(
        in pool: PostgresPool, where condition: PostgresFragment = "true", pageSize: Int = 100,
        _ body: (_ hash: String, _ bytes: Int) async throws -> Void
    ) async throws {
        var after = ""
        while true {
            let rows = try await pool.query("""
                select content_hash, min(bytes) as bytes from (
                    select content_hash, bytes from photo_uploads where \(condition) and content_hash > \(after)
                    union all
                    select content_hash, bytes from entry_photos where \(condition) and content_hash > \(after)
                ) as named
                group by content_hash order by content_hash limit \(pageSize)
                """)
            for row in rows {
                let hash: String = try row.decode("content_hash")
                after = hash
                try await body(hash, try row.decode("bytes"))
            }
            if rows.count < pageSize { return }
        }
    }
}
