import BuzzKitContracts
import BuzzKitPolicy
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

@testable import GatewayApp

/// `lib/vocabulary.js`, the module the gateway writes for the dashboard: the server's own lists,
/// read back from the module's text as a browser would get them, served in place of any file of
/// that name, and never kept in the source tree.
@Suite("Dashboard vocabulary: the server's lists, served")
struct DashboardVocabularyTests {
    /// The JSON object in the module's `export const vocabulary = freeze(...)` line.
    static func served(_ module: String) throws -> JSONValue {
        let line = try #require(
            module.split(separator: "\n").first { $0.hasPrefix("export const vocabulary = freeze(") })
        let json = line.dropFirst("export const vocabulary = freeze(".count).dropLast(2)
        #expect(line.hasSuffix(");"))
        return try JSONValue.parse(String(json))
    }

    @Test func theModuleHoldsTheServersListsAndExportsEachByName() throws {
        let module = DashboardVocabulary.module
        let lists = try Self.served(module)
        let strings = { (name: String) in lists[name]?.arrayValue?.compactMap(\.stringValue) }
        #expect(strings("deliveryStatus") == DeliveryStatus.allCases.map(\.rawValue))
        #expect(strings("messageStatus") == MessageStatus.allCases.map(\.rawValue))
        #expect(strings("messageKind") == MessageKind.allCases.map(\.rawValue))
        #expect(strings("liveActivityEvent") == LiveActivitySendRequest.Event.allCases.map(\.rawValue))
        #expect(strings("liveActivityResultStatus") == LiveActivityResult.Status.allCases.map(\.rawValue))
        #expect(strings("interruptionLevel") == InterruptionLevel.allCases.map(\.rawValue))
        #expect(strings("workflowStepDecision")?.contains("scheduled_on_device") == true)
        #expect(strings("dryRunEntryKind")?.contains("acknowledgement") == true)
        #expect(strings("apiKeyKind") == APIKeyKind.allCases.map(\.rawValue))
        #expect(strings("suppressedReason") == SuppressionReason.allCases.map(\.rawValue))
        #expect(strings("preferenceSource") == PreferenceSource.allCases.map(\.rawValue))
        #expect(strings("capWindow") == CapWindow.allCases.map(\.rawValue))
        for kind in APIKeyKind.allCases {
            #expect(
                lists["scopesByKeyKind"]?[kind.rawValue]?.arrayValue?.compactMap(\.stringValue)
                    == Scope.allowed(for: kind).map(\.rawValue))
        }
        #expect(lists == DashboardVocabulary.json)
        for (name, _) in DashboardVocabulary.lists {
            #expect(
                module.components(separatedBy: "export const \(name) = vocabulary.\(name);\n").count == 2, "\(name)")
        }
        #expect(!module.contains("innerHTML") && !module.contains("eval("))
    }

    /// The lists the API document states for the same fields are these very lists.
    @Test func theAPIDocumentStatesTheSameLists() throws {
        #expect(LiveActivityRoutes.states == ["active", "ended"])
        #expect(LiveActivityRoutes.tokenStatuses == ["active", "invalid"])
        let document = OpenAPIDocument.build(routes: GatewayRoute.table).jsonString
        for list in [LiveActivityRoutes.states, LiveActivityRoutes.tokenStatuses, LiveActivitySendRoutes.resultStatuses]
        {
            let text = JSONValue.array(list.map(JSONValue.string)).jsonString
            #expect(document.contains("\"enum\":\(text)"), "\(text) is not an enum of the API document")
        }
    }

    @Test func theSiteServesItInPlaceOfAnyFileOfThatName() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(TestEnvironment.uniqueName("vocab"))
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("lib"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data("<!doctype html>".utf8).write(to: dir.appendingPathComponent("index.html"))
        try Data("export const deliveryStatus = ['made_up'];".utf8).write(
            to: dir.appendingPathComponent("lib/vocabulary.js"))
        let site = try DashboardSite(directory: dir)
        let file = try #require(site.files[DashboardVocabulary.path])
        #expect(String(decoding: file.bytes, as: UTF8.self) == DashboardVocabulary.module)
        #expect(file.contentType == "text/javascript; charset=utf-8")
        #expect(file.etag == DashboardSite.etag(Array(DashboardVocabulary.module.utf8)))
    }

    @Test func theSourceTreeHoldsNoCopy() {
        let path = TestEnvironment.repositoryRoot + "/Services/gateway/App/Dashboard/lib/vocabulary.js"
        #expect(
            !FileManager.default.fileExists(atPath: path), "lib/vocabulary.js is written by the gateway: delete \(path)"
        )
    }
}
