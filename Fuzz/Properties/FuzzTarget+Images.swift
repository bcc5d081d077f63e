@testable import DiaryCore

extension FuzzTarget {
    /// What `ImageSanitizer` promises of an upload: a refusal is one of its documented
    /// rejections (415, 422), and what it accepts comes out smaller or the same size, parses
    /// again as the same format, is unchanged by a second pass, and holds no metadata beyond
    /// what `ImageStructure` allows.
    static func checkImage(_ bytes: [UInt8], declaredAs format: PhotoContentType) throws(PropertyViolation) {
        let image: SanitizedImage
        do {
            image = try ImageSanitizer.sanitize(bytes, declaredAs: format)
        } catch {
            switch error {
            case .notDeclaredType:
                try require(ImageSanitizer.sniff(bytes[...]) != format, "refused as not \(format) although its magic bytes say \(format)")
            case .tooLarge(let width, let height):
                try require(max(width, height) > ImageSanitizer.maximumSide, "refused as too large at \(width)×\(height)")
            case .unreadable:
                break
            }
            return
        }
        try require(
            image.bytes.count <= bytes.count + ImageStructure.growthAllowed(format),
            "the output (\(image.bytes.count) bytes) is larger than the input (\(bytes.count))"
        )
        let again: SanitizedImage
        do {
            again = try ImageSanitizer.sanitize(image.bytes, declaredAs: format)
        } catch {
            throw PropertyViolation("the output does not parse again as \(format): \(error)")
        }
        try require(again == image, "sanitizing the output again changes it")
        switch format {
        case .jpeg: try ImageStructure.checkJPEG(image)
        case .png: try ImageStructure.checkPNG(image.bytes)
        case .webp: try ImageStructure.checkWebP(image.bytes)
        }
    }
}
