import BuzzKitPolicy
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The categories a workflow's `send` steps name must exist when it is saved (422 at the step's
/// `send.category`), and stay locked against deletion until the save commits, so a category
/// deleted at the same moment either refuses (409, the workflow is there) or is seen gone here.
enum WorkflowCategories {
    /// Every `send.category` of the body as written, with its path (`steps[1].send.category`,
    /// branches' steps included).
    static func named(in body: JSONValue, path: String = "") -> [(path: String, key: String)] {
        switch body {
        case .object(let members):
            var found: [(path: String, key: String)] = []
            for (name, value) in members.sorted(by: { $0.key < $1.key }) {
                let here = path.isEmpty ? name : "\(path).\(name)"
                if name == "send", let key = value["category"]?.stringValue {
                    found.append(("\(here).category", key))
                }
                found += named(in: value, path: here)
            }
            return found
        case .array(let items):
            return items.enumerated().flatMap { named(in: $0.element, path: "\(path)[\($0.offset)]") }
        default:
            return []
        }
    }

    /// 422 `validation_failed` naming each `send.category` the tenant does not have.
    static func check(_ body: JSONValue, tenant: UUID, on tx: PostgresConnection) async throws {
        let named = named(in: body)
        guard !named.isEmpty else { return }
        let missing = try await Policy.missingCategories(Set(named.map(\.key)), tenant: tenant, lock: true, on: tx)
        let issues = named.filter { missing.contains($0.key) }.map {
            ValidationIssue(path: $0.path, message: "no category with the key \($0.key)")
        }
        guard issues.isEmpty else {
            throw ValidationIssue.apiError(issues, message: "the workflow names \(issues.count) unknown categories")
        }
    }
}
