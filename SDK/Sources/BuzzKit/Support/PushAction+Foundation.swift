import BuzzKitWire

extension PushAction {
    /// `data` as a Foundation dictionary (`JSONValue.anyValue` of each value: String, Int64,
    /// Double, Bool, NSNull, arrays and dictionaries), for code that wants `[String: Any]`.
    public var anyValue: [String: Any] { data.mapValues(\.anyValue) }
}
