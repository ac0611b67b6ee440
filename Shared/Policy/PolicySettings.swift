/// A tenant's send-policy settings (`GET/PATCH /v1/settings`): the category of a message that
/// names none, and the frequency caps in the order they were given.
public struct PolicySettings: Sendable, Hashable {
    /// nil: a message without a category is governed by the global opt-out only.
    public var defaultCategory: String?
    public var frequencyCaps: [FrequencyCap]

    public init(defaultCategory: String? = nil, frequencyCaps: [FrequencyCap] = []) {
        self.defaultCategory = defaultCategory
        self.frequencyCaps = frequencyCaps
    }
}
