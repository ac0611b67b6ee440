import Foundation

/// One `NNNN_name.sql` file: its version (the number), name and text.
public struct MigrationFile: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var sql: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }

    /// Hex FNV-1a (64-bit) of the file's UTF-8 bytes: detects an edited migration, is not a
    /// security hash.
    public var checksum: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in sql.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Reads every `NNNN_name.sql` in `directory`, ordered by version. Other files are ignored;
    /// two files with one version are an error.
    public static func load(from directory: URL) throws(MigrationError) -> [MigrationFile] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw MigrationError(code: .directoryUnreadable, message: "cannot read \(directory.path)")
        }
        var files: [MigrationFile] = []
        for fileName in names where fileName.hasSuffix(".sql") {
            let stem = fileName.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"), let version = Int(stem[..<underscore]),
                stem[..<underscore].count >= 4
            else { continue }
            let url = directory.appendingPathComponent(fileName)
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw MigrationError(code: .directoryUnreadable, message: "cannot read \(fileName)")
            }
            files.append(
                MigrationFile(
                    version: version, name: String(stem[stem.index(after: underscore)...]),
                    sql: String(decoding: data, as: UTF8.self)))
        }
        files.sort { $0.version < $1.version }
        for (a, b) in zip(files, files.dropFirst()) where a.version == b.version {
            throw MigrationError(
                code: .duplicateVersion, message: "two migrations have version \(a.version): \(a.name), \(b.name)")
        }
        return files
    }
}

/// Why migrating stopped. `code` is stable; the message names the file.
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let directoryUnreadable = Code(rawValue: "directory_unreadable")
        public static let duplicateVersion = Code(rawValue: "duplicate_version")
        /// An applied migration's file changed since it was applied.
        public static let checksumMismatch = Code(rawValue: "checksum_mismatch")
        /// The SQL of a migration failed; nothing of that file was applied.
        public static let migrationFailed = Code(rawValue: "migration_failed")
    }

    public var code: Code
    public var message: String
    public var version: Int?
    /// The database error, for `migrationFailed`.
    public var underlying: PostgresErrorSummary?

    public init(code: Code, message: String, version: Int? = nil, underlying: PostgresErrorSummary? = nil) {
        self.code = code
        self.message = message
        self.version = version
        self.underlying = underlying
    }

    public var description: String {
        "MigrationError(\(code.rawValue)): \(message)" + (underlying.map { " - \($0.sqlState): \($0.message)" } ?? "")
    }
}

/// The SQLSTATE and message of the statement that failed inside a migration.
public struct PostgresErrorSummary: Sendable, Hashable {
    public var sqlState: String
    public var message: String
}
