extension Array {
    /// The elements in consecutive batches of at most `size`, in order: what one statement or
    /// one call takes at most, whatever the number of elements.
    func inBatches(of size: Int = 5000) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
