import BuzzKit
import Foundation
import Testing

/// The configuration as the seeds write it: `Configuration(...)` with labelled settings, reachable
/// under its short name once `BuzzKit` is imported.
@Suite("SDK: Configuration as the documents write it")
struct ConfigurationTests {
    let base = URL(string: "https://api.example.com")!

    @Test func theShortNameIsTheSDKsConfigurationWithTheDocumentedDefaults() {
        let configuration = Configuration(apiKey: "bk_ck_1", baseURL: base)
        #expect(type(of: configuration) == BuzzKit.Configuration.self)
        #expect(configuration.apiKey == "bk_ck_1")
        #expect(configuration.baseURL == base)
        #expect(configuration.appGroup == nil)
        #expect(configuration.automaticSessionTracking)
        #expect(configuration.automaticPushHandling)
        #expect(configuration.pushEnvironment == nil)
        #expect(configuration.storageDirectory == nil)
        #expect(configuration.appVersion == Configuration.mainBundleVersion)
        #expect(configuration.appBuild == Configuration.mainBundleBuild)
        #expect(configuration.bundleId == Bundle.main.bundleIdentifier)
        #expect(configuration.flushDelayAfterTrack == 3)
        #expect(configuration.flushDelayAfterConfigure == 5)
        #expect(configuration.batchSize == 100)
        #expect(configuration.maxAttempts == 20)
        #expect(configuration.sessionResumeWindow == 30)
        #expect(configuration.sessionHeartbeatInterval == 10)
        #expect(configuration.retryBaseDelay == 5)
        #expect(configuration.retryMaxDelay == 300)
        #if !canImport(os)
            #expect(configuration.logHandler == nil)  // nowhere on Linux
        #endif
    }

    @Test func everySettingIsALabelledArgumentAndKept() {
        let directory = URL(fileURLWithPath: "/tmp/bk-configuration-test")
        let configuration = Configuration(
            apiKey: "bk_ck_2", baseURL: base, appGroup: "group.com.example.gym", automaticSessionTracking: false,
            automaticPushHandling: false, pushEnvironment: .production, storageDirectory: directory,
            appVersion: "3.1", appBuild: "42", bundleId: "com.example.gym", logHandler: { _ in },
            flushDelayAfterTrack: 1, flushDelayAfterConfigure: 2, batchSize: 50, maxAttempts: 7,
            sessionResumeWindow: 15, sessionHeartbeatInterval: 4, retryBaseDelay: 0.5, retryMaxDelay: 60)
        #expect(configuration.appGroup == "group.com.example.gym")
        #expect(!configuration.automaticSessionTracking)
        #expect(!configuration.automaticPushHandling)
        #expect(configuration.pushEnvironment == .production)
        #expect(configuration.storageDirectory == directory)
        #expect(configuration.appVersion == "3.1")
        #expect(configuration.appBuild == "42")
        #expect(configuration.bundleId == "com.example.gym")
        #expect(configuration.logHandler != nil)
        #expect(configuration.flushDelayAfterTrack == 1)
        #expect(configuration.flushDelayAfterConfigure == 2)
        #expect(configuration.batchSize == 50)
        #expect(configuration.maxAttempts == 7)
        #expect(configuration.sessionResumeWindow == 15)
        #expect(configuration.sessionHeartbeatInterval == 4)
        #expect(configuration.retryBaseDelay == 0.5)
        #expect(configuration.retryMaxDelay == 60)
    }

    /// "Set `automaticSessionTracking: false` in the configuration": the argument form behaves as
    /// the property did.
    @Test func automaticSessionTrackingFalseAsAnArgumentEmitsNoSessions() async throws {
        let h = try Harness { current in
            current = Configuration(
                apiKey: current.apiKey, baseURL: current.baseURL, automaticSessionTracking: false,
                pushEnvironment: current.pushEnvironment, storageDirectory: current.storageDirectory,
                appVersion: current.appVersion, appBuild: current.appBuild,
                bundleId: current.bundleId, logHandler: current.logHandler)
        }
        await h.client.handle(.foreground)
        await h.clock.advance(by: 10)
        await h.client.handle(.background)
        await h.client.flushEvents()
        #expect(h.transport.sentNames.isEmpty)
    }
}
