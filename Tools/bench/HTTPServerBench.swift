// Placeholder until the benchmark is written.
enum HTTPServerBench {
    static func run(arguments: [String]) async throws {
        throw BenchNotWritten()
    }
}
struct BenchNotWritten: Error {}
