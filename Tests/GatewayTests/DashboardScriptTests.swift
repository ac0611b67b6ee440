import BuzzKitTestSupport
import Foundation
import Testing

@testable import GatewayApp

/// The dashboard's JavaScript unit tests (`Tests/Dashboard/*.test.js`, Node's built-in test runner
/// from Debian's `nodejs`) against the very `lib/vocabulary.js` the gateway serves: the dashboard
/// and its tests are copied into a folder of their own with that module written next to the other
/// `lib/` files (it is not in the source tree), and `node --test` runs every test file there. A
/// failing JavaScript test fails this test, with Node's report.
@Suite("Dashboard scripts: the JavaScript unit tests under Node", .requiresNode)
struct DashboardScriptTests {
    static let dashboard = "Services/gateway/App/Dashboard"
    static let tests = "Tests/Dashboard"

    @Test func theJavaScriptUnitTestsPassAgainstTheServedVocabulary() async throws {
        let files = FileManager.default
        let root = URL(fileURLWithPath: TestEnvironment.repositoryRoot)
        let tree = files.temporaryDirectory.appendingPathComponent(TestEnvironment.uniqueName("dashboard-js"))
        defer { try? files.removeItem(at: tree) }
        for folder in [Self.dashboard, Self.tests] {
            let target = tree.appendingPathComponent(folder)
            try files.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            try files.copyItem(at: root.appendingPathComponent(folder), to: target)
        }
        let site = try DashboardSite(directory: root.appendingPathComponent(Self.dashboard))
        let vocabulary = try #require(site.files[DashboardVocabulary.path])
        try Data(vocabulary.bytes).write(to: tree.appendingPathComponent(Self.dashboard + "/lib/vocabulary.js"))
        // The dashboard's files are JavaScript modules; Node reads `.js` as one only under this.
        try Data("{\"type\": \"module\"}\n".utf8).write(to: tree.appendingPathComponent("package.json"))

        let names = try files.contentsOfDirectory(atPath: tree.appendingPathComponent(Self.tests).path)
            .filter { $0.hasSuffix(".test.js") }.sorted()
        #expect(names.count >= 9, "test files: \(names)")
        let log = tree.appendingPathComponent("node-test.log").path
        let status = try await Subprocess.run(
            [TestEnvironment.node, "--test", "--test-reporter=tap"]
                + names.map { tree.appendingPathComponent(Self.tests + "/" + $0).path },
            outputPath: log)
        let report = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(status == 0, "node --test failed (exit \(status)):\n\(report)")
        let passed = Self.count("pass", in: report)
        #expect(passed >= 50 && Self.count("fail", in: report) == 0, "passed \(passed):\n\(report)")
    }

    /// The TAP summary's `# pass N` (or `# fail N`) line.
    static func count(_ word: String, in report: String) -> Int {
        for line in report.split(separator: "\n") where line.hasPrefix("# \(word) ") {
            return Int(line.dropFirst(word.count + 3)) ?? -1
        }
        return -1
    }
}
