import BuzzKitWire
import BuzzKitWorkflows
import Foundation

/// An event as the run store keeps it (a pending run's trigger, an inbox input):
/// `{"id", "name", "data", "occurredAt"}`, instants as `EventTimestamp` text (whole microseconds).
public enum WorkflowEventJSON {
    public static func encode(_ event: WorkflowEvent) -> JSONValue { event.jsonValue }

    /// `encode(event)` as JSON text, written without the tree.
    public static func text(_ event: WorkflowEvent) -> String { event.jsonText }

    /// nil when `json` is not such an object.
    public static func decode(_ json: JSONValue) -> WorkflowEvent? {
        guard let id = json["id"]?.stringValue, let name = json["name"]?.stringValue,
            let occurred = json["occurredAt"]?.stringValue.flatMap(EventTimestamp.parse)
        else { return nil }
        return WorkflowEvent(id: id, name: name, data: json["data"] ?? [:], occurredAt: occurred)
    }
}
