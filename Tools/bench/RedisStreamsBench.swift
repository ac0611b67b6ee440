// Placeholder until the benchmark is written.
enum RedisStreamsBench {
    static func run(arguments: [String]) async throws {
        throw BenchNotWritten()
    }
}
