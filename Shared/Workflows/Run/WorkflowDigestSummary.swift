import BuzzKitWire
import Foundation

/// What a digest collected, as the run keeps it once its window closed: how many trigger events,
/// the first and the last, and the distinct values of its `list` field in order of arrival. The
/// templates after the step read it as `digest.count`, `digest.first`, `digest.last`, `digest.list`.
public struct WorkflowDigestSummary: Sendable, Hashable {
    /// The distinct list values a summary keeps (`digest.list` writes two of them and a count).
    public static let maxValues = 20

    /// Every event collected, the one that started the run included.
    public var count: Int
    public var first: WorkflowEvent
    public var last: WorkflowEvent
    /// The first `maxValues` distinct values of the list field, in order of arrival.
    public var values: [String]
    /// How many distinct values there were in all.
    public var distinctValues: Int

    public init(count: Int, first: WorkflowEvent, last: WorkflowEvent, values: [String] = [], distinctValues: Int = 0) {
        self.count = count
        self.first = first
        self.last = last
        self.values = values
        self.distinctValues = max(distinctValues, values.count)
    }

    /// The values as people write them: "Ana", "Ana and Ben", "Ana, Ben and Cid", "Ana, Ben and 3
    /// others"; nil when no event had the field.
    public var listText: String? {
        switch (values.count, distinctValues) {
        case (0, _): nil
        case (1, 1): values[0]
        case (_, 2): "\(values[0]) and \(values[1])"
        case (_, 3) where values.count == 3: "\(values[0]), \(values[1]) and \(values[2])"
        default: "\(values[0]), \(values[1]) and \(distinctValues - 2) others"
        }
    }

    /// `{count, first, last, list?}` as templates and conditions read it.
    var documentJSON: JSONValue {
        var o: [String: JSONValue] = [
            "count": .int(Int64(count)), "first": first.documentJSON, "last": last.documentJSON
        ]
        if let listText { o["list"] = .string(listText) }
        return .object(o)
    }
}

/// Folds the events of a digest, in order of arrival, into its summary (the runtime reads them
/// from the store, the dry run from the request): no event needs to be held.
public struct WorkflowDigestCollector: Sendable {
    public let list: WorkflowDataPath?
    public private(set) var count = 0
    private var first: WorkflowEvent?
    private var last: WorkflowEvent?
    private var values: [String] = []
    private var seen = Set<String>()

    public init(list: WorkflowDataPath?) { self.list = list }

    public mutating func add(_ event: WorkflowEvent) {
        count += 1
        if first == nil { first = event }
        last = event
        guard let list, let value = list.value(in: event) else { return }
        let text: String
        switch value {
        case .null: return
        case .string(let s): text = s
        default: text = value.jsonString
        }
        guard !text.isEmpty, seen.insert(text).inserted else { return }
        if values.count < WorkflowDigestSummary.maxValues { values.append(text) }
    }

    /// Nil before the first event.
    public var summary: WorkflowDigestSummary? {
        guard let first, let last else { return nil }
        return WorkflowDigestSummary(
            count: count, first: first, last: last, values: values, distinctValues: seen.count)
    }
}
