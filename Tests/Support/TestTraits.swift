import Testing

/// Traits for integration suites: without the servers `./deploy/test` starts, the suite is
/// skipped with a message saying what is missing, so a bare `swift test` runs the unit tests and
/// passes. Put one on the `@Suite` (or `@Test`): `@Suite(.requiresPostgres) struct ...`.
extension Trait where Self == ConditionTrait {
    /// The shared test PostgreSQL (`TEST_POSTGRES_URL`).
    public static var requiresPostgres: Self {
        .enabled(
            if: TestEnvironment.hasPostgres,
            "TEST_POSTGRES_URL is not set: this integration test runs under ./deploy/test")
    }

    /// The shared test Redis (`TEST_REDIS_URL`).
    public static var requiresRedis: Self {
        .enabled(
            if: TestEnvironment.hasRedis,
            "TEST_REDIS_URL is not set: this integration test runs under ./deploy/test")
    }

    /// Node.js (`TEST_NODE`, Debian's `nodejs`), for the dashboard's JavaScript unit tests.
    public static var requiresNode: Self {
        .enabled(if: TestEnvironment.hasNode, "TEST_NODE is not set: the JavaScript unit tests run under ./deploy/test")
    }

    /// Everything `./deploy/test` provides: PostgreSQL and Redis (URLs and folders) and the built
    /// executables (`BUZZKIT_BIN_DIR`), for end-to-end tests that run the services.
    public static var requiresTestStack: Self {
        .enabled(
            if: TestEnvironment.hasTestStack,
            "TEST_POSTGRES_URL, TEST_REDIS_URL, TEST_POSTGRES_DIR, TEST_REDIS_DIR or BUZZKIT_BIN_DIR is not set: this end-to-end test runs under ./deploy/test"
        )
    }
}
