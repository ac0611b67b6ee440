import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitPolicy
import BuzzKitWire
import BuzzKitWorkflows

/// The server's vocabularies as the dashboard reads them: `/dashboard/lib/vocabulary.js`, a
/// JavaScript module the gateway writes when it starts from the very types the API answers with.
///
/// The pages never list a status, kind or scope of their own: they import these lists (the
/// delivery filter and a suppressed delivery's reason, the run filter, the interruption levels, a
/// frequency cap's windows, the scopes a key may hold) and key their presentation on them
/// (`lib/status.js` gives every value a tone and a label). The file is
/// not in the source tree, so there is no copy to keep in step; a value added to one of these
/// types appears in the dashboard at the next start, and the dashboard's unit tests (run against
/// this module by `DashboardScriptTests`) fail until `lib/status.js` says how to show it.
enum DashboardVocabulary {
    /// The URL path the module is served at (a file of that name in the folder is replaced).
    static let path = DashboardSite.mount + "/lib/vocabulary.js"

    /// Each vocabulary by the name the module exports it under, in the order the server lists it.
    static let lists: [(name: String, value: JSONValue)] = [
        ("deliveryStatus", strings(DeliveryStatus.allCases.map(\.rawValue))),
        ("suppressedReason", strings(SuppressionReason.allCases.map(\.rawValue))),
        ("messageStatus", strings(MessageStatus.allCases.map(\.rawValue))),
        ("messageKind", strings(MessageKind.allCases.map(\.rawValue))),
        ("workflowRunStatus", strings(WorkflowRunStatus.shown.map(\.rawValue))),
        ("workflowStepStatus", strings(WorkflowStepOutcome.Status.allCases.map(\.rawValue))),
        ("workflowStepDecision", strings(WorkflowStepDecision.allCases.map(\.rawValue))),
        ("dryRunEntryKind", strings(WorkflowDryRun.Entry.Kind.allCases.map(\.rawValue))),
        ("liveActivityEvent", strings(LiveActivitySendRequest.Event.allCases.map(\.rawValue))),
        ("liveActivityResultStatus", strings(LiveActivitySendRoutes.resultStatuses)),
        ("liveActivityState", strings(LiveActivityRoutes.states)),
        ("liveActivityEndedBy", strings(LiveActivityRoutes.endedBy)),
        ("liveActivityTokenStatus", strings(LiveActivityRoutes.tokenStatuses)),
        ("pushPriority", strings(LiveActivitySendRoutes.priorities)),
        ("preferenceSource", strings(PreferenceSource.allCases.map(\.rawValue))),
        ("capWindow", strings(CapWindow.allCases.map(\.rawValue))),
        ("interruptionLevel", strings(InterruptionLevel.allCases.map(\.rawValue))),
        ("apnsEnvironment", strings(APNsEnvironment.allCases.map(\.rawValue))),
        ("apiKeyKind", strings(APIKeyKind.allCases.map(\.rawValue))),
        (
            "scopesByKeyKind",
            .object(
                Dictionary(
                    uniqueKeysWithValues: APIKeyKind.allCases.map { kind in
                        (kind.rawValue, strings(Scope.allowed(for: kind).map(\.rawValue)))
                    }))
        )
    ]

    /// Every list as one JSON object (sorted keys: the same server always writes the same bytes).
    static var json: JSONValue {
        .object(Dictionary(uniqueKeysWithValues: lists.map { ($0.name, $0.value) }))
    }

    /// The module's text: the lists frozen (deeply), exported one by one and as `vocabulary`.
    static var module: String {
        var text = """
            // The server's vocabularies, written by the gateway when it starts
            // (Services/gateway/App/Site/DashboardVocabulary.swift) from the types the API answers with.
            // Not a file of the source tree: import from it, never copy a list out of it.
            const freeze = (value) => {
              if (value && typeof value === 'object') { Object.values(value).forEach(freeze); Object.freeze(value); }
              return value;
            };
            export const vocabulary = freeze(\(json.jsonString));

            """
        for (name, _) in lists { text += "export const \(name) = vocabulary.\(name);\n" }
        return text
    }

    private static func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }
}
