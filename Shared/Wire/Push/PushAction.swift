/// A named action the app registered a handler for (`BuzzKit.actions.register(name)`), with data
/// chosen on the server. Travels as `bk.action {name, data}`.
public struct PushAction: Sendable, Hashable {
    public var name: String
    /// Any JSON object, delivered exactly as sent. Default empty.
    public var data: [String: JSONValue]

    public init(name: String, data: [String: JSONValue] = [:]) {
        self.name = name
        self.data = data
    }
}
