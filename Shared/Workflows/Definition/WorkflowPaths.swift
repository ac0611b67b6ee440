import BuzzKitWire

/// The paths conditions and templates read from a run's document:
///
/// | path | what |
/// |---|---|
/// | `event.name`, `event.data.<x>` | the event being decided on (`trigger.where`, `cancelOn.where`, `waitFor.where`) |
/// | `trigger.name`, `trigger.data.<x>` | the event that started the run |
/// | `subscriber.id`, `subscriber.attributes.<y>`, `subscriber.timezone`, `subscriber.locale` | the subscriber as the run started |
/// | `steps.<name>.outcome` | an earlier step's decision (`matched`, `timed_out`, `then`, `else`, `sent`, `waited`, ...) |
/// | `steps.<name>.event.name`, `steps.<name>.event.data.<x>` | the event an earlier `waitFor` matched |
/// | `digest.count`, `digest.list`, `digest.first.data.<x>`, `digest.last.data.<x>` (also `.name`, `.id`) | what the workflow's digest step collected (templates and branch conditions) |
public enum WorkflowPaths {
    /// Nil when `path` is one of the shapes above with a root in `roots`, else why not.
    public static func problem(_ path: [String], roots: Set<String>) -> String? {
        guard let root = path.first else { return "an empty path" }
        guard roots.contains(root) else {
            return "'\(root)' is not available here: a path starts with " + roots.sorted().joined(separator: ", ")
        }
        let dotted = path.joined(separator: ".")
        switch root {
        case "event", "trigger":
            if path.count == 2 && path[1] == "name" { return nil }
            if path.count >= 3 && path[1] == "data" { return nil }
            return "\(dotted) is not a field: use \(root).name or \(root).data.<key>"
        case "subscriber":
            if path.count == 2 && ["id", "timezone", "locale"].contains(path[1]) { return nil }
            if path.count >= 3 && path[1] == "attributes" { return nil }
            return
                "\(dotted) is not a field: use subscriber.id, subscriber.timezone, subscriber.locale or subscriber.attributes.<key>"
        case "digest":
            if path.count == 2 && (path[1] == "count" || path[1] == "list") { return nil }
            if path.count == 3 && (path[1] == "first" || path[1] == "last") && (path[2] == "name" || path[2] == "id") {
                return nil
            }
            if path.count >= 4 && (path[1] == "first" || path[1] == "last") && path[2] == "data" { return nil }
            return
                "\(dotted) is not a field: use digest.count, digest.list, digest.first.data.<key> or digest.last.data.<key>"
        case "steps":
            if path.count == 3 && path[2] == "outcome" { return nil }
            if path.count == 4 && path[2] == "event" && path[3] == "name" { return nil }
            if path.count >= 5 && path[2] == "event" && path[3] == "data" { return nil }
            return "\(dotted) is not a field: use steps.<name>.outcome or steps.<name>.event.data.<key>"
        default:
            return "'\(root)' is not available here"
        }
    }

    /// The value at `path` below `root`, walking objects only.
    public static func lookup(_ path: [String], in root: JSONValue) -> JSONValue? {
        var value = root
        for key in path {
            guard case .object(let object) = value, let next = object[key] else { return nil }
            value = next
        }
        return value
    }
}
