/// A push stack that could not be set up or driven.
struct StackError: Error, CustomStringConvertible {
    var description: String
}
