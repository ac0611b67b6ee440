// Placeholder until the benchmark is written.
enum PostgresBulkBench {
    static func run(arguments: [String]) async throws {
        throw BenchNotWritten()
    }
}
