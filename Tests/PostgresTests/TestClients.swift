import BuzzKitPostgres
import BuzzKitTestSupport

/// Runs `body` with a client on the shared test server and shuts it down afterwards, whether
/// `body` threw or not. With `schema`, the sessions use that schema of their own (created first).
func withClient<T>(
    schema: String? = nil, poolSize: Int = 4, _ body: (PostgresClient) async throws -> T
) async throws -> T {
    let client: PostgresClient
    if let schema {
        client = try await PostgresTestSupport.client(schema: schema, poolSize: poolSize)
    } else {
        var configuration = try PostgresConfiguration(url: TestEnvironment.postgresURL)
        configuration.poolSize = poolSize
        client = PostgresClient(configuration: configuration, logger: .silent())
    }
    do {
        let result = try await body(client)
        await client.shutdown()
        return result
    } catch {
        await client.shutdown()
        throw error
    }
}
