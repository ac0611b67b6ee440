/// Quoting of SQL identifiers (table, column, channel names) for statements built by the wrapper.
enum PostgresIdentifier {
    /// `name` as a quoted identifier: `"na""me"`.
    static func quote(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// A possibly schema-qualified name (`schema.table`), each part quoted.
    static func quoteQualified(_ name: String) -> String {
        name.split(separator: ".", omittingEmptySubsequences: false).map { quote(String($0)) }.joined(separator: ".")
    }
}
