/// What a create with a client-chosen id did: made the row, or recognised a retry of the
/// same request and answered what the first one made (201 and 200 to the client). Any other
/// reuse of the id is refused by the repository, and the stored row is untouched.
package enum Creation<Value: Sendable>: Sendable {
    case created(Value)
    case replayed(Value)
}
