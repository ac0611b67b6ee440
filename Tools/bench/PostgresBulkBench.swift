import BuzzKitCore
import BuzzKitPostgres
import BuzzKitWire
import Foundation

/// The Swift side of `bench/postgres_bulk.sh`: bulk writes of ledger-like rows (about 530 bytes of
/// COPY text each, with a jsonb payload) through `PostgresClient`.
///
/// `postgres-bulk --url URL --rows N --mode copy|insert --table T` writes N rows and prints
/// `rows=N seconds=S rows_per_s=R`; `--mode file --out PATH` writes the same rows as COPY text for
/// the psql baseline and prints the average row size.
enum PostgresBulkBench {
    static let columns = ["id", "message_id", "device_token", "status", "attempt", "created_at", "payload"]

    static func run(arguments: [String]) async throws {
        var options: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count {
            options[arguments[index].replacingOccurrences(of: "--", with: "")] = arguments[index + 1]
            index += 2
        }
        let count = Int(options["rows"] ?? "100000") ?? 100_000
        let mode = options["mode"] ?? "copy"
        let rows = makeRows(count)

        if mode == "file" {
            guard let path = options["out"] else { throw BenchUsage(message: "--out PATH is required for --mode file") }
            var text = [UInt8]()
            text.reserveCapacity(count * 560)
            for row in rows { appendCopyLine(row, to: &text) }
            _ = FileManager.default.createFile(atPath: path, contents: Data(text))
            print("file_rows=\(count) avg_row_bytes=\(text.count / max(count, 1))")
            return
        }

        guard let url = options["url"] else { throw BenchUsage(message: "--url is required") }
        let table = options["table"] ?? "bench_swift"
        var configuration = try PostgresConfiguration(url: url)
        configuration.poolSize = 1
        let client = PostgresClient(configuration: configuration, logger: .silent())
        try await client.ping()
        let clock = ContinuousClock()
        let start = clock.now
        let written: Int
        switch mode {
        case "copy": written = try await client.copy(into: table, columns: columns, rows: rows)
        case "insert": written = try await client.insert(into: table, columns: columns, rows: rows)
        default: throw BenchUsage(message: "unknown --mode \(mode)")
        }
        let elapsed = clock.now - start
        await client.shutdown()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(
            "mode=\(mode) rows=\(written) seconds=\(String(format: "%.3f", seconds)) rows_per_s=\(Int(Double(written) / seconds))"
        )
    }

    struct BenchUsage: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// Deterministic ledger-like rows: two UUIDs, a 64-hex token, status, attempt, time, ~330 B jsonb.
    static func makeRows(_ count: Int) -> [[any PostgresEncodable]] {
        let base = Date(timeIntervalSince1970: 1_714_564_800)
        return (0..<count).map { i in
            let token = String(repeating: String(format: "%016llx", UInt64(i) &* 0x9E37_79B9_7F4A_7C15), count: 4)
            let payload: JSONValue = [
                "aps": [
                    "alert": [
                        "title": .string("Your order #\(i) shipped"),
                        "body": "It will arrive on Thursday between 9am and 1pm. Tap to track it."
                    ],
                    "sound": "default", "badge": .int(Int64(i % 9)), "thread-id": "orders"
                ],
                "bk": [
                    "m": .string(uuid(i, 7).uuidString), "dl": .string("shop://orders/\(i)"),
                    "a": ["name": "track", "data": ["order": .int(Int64(i))]]
                ],
                "data": ["campaign": "spring-sale", "variant": "b"]
            ]
            let row: [any PostgresEncodable] = [
                uuid(i, 1), uuid(i, 2), token, "sent", i % 3 + 1, base.addingTimeInterval(Double(i) / 1000), payload
            ]
            return row
        }
    }

    private static func uuid(_ i: Int, _ salt: UInt8) -> UUID {
        var bytes = [UInt8](repeating: salt, count: 16)
        withUnsafeBytes(of: UInt64(i).bigEndian) { for (k, b) in $0.enumerated() { bytes[8 + k] = b } }
        bytes[6] = 0x40 | (bytes[6] & 0x0f)
        bytes[8] = 0x80 | (bytes[8] & 0x3f)
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    /// COPY text line, same escaping as the wrapper (for the psql file).
    private static func appendCopyLine(_ row: [any PostgresEncodable], to out: inout [UInt8]) {
        for (i, value) in row.enumerated() {
            if i > 0 { out.append(9) }
            guard let text = value.postgresText else {
                out.append(contentsOf: Array("\\N".utf8))
                continue
            }
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
                case UInt8(ascii: "\n"): out.append(contentsOf: [92, UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): out.append(contentsOf: [92, UInt8(ascii: "r")])
                case UInt8(ascii: "\t"): out.append(contentsOf: [92, UInt8(ascii: "t")])
                default: out.append(byte)
                }
            }
        }
        out.append(10)
    }
}
