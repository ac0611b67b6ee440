import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

/// `ErrorCode.all` is the one list of the API's error codes: the OpenAPI document, the error-code
/// table of docs/api.md, every route's codes and every `ErrorCode(...)` declared in the sources agree
/// with it, status included.
@Suite("Error codes: one list")
struct ErrorCodeListTests {
    static let all = ErrorCode.all.map { ($0.rawValue, $0.httpStatus) }

    @Test func codesAreSnakeCaseAndUnique() {
        let names = ErrorCode.all.map(\.rawValue)
        #expect(Set(names).count == names.count, "\(names)")
        for name in names {
            #expect(name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == UInt8(ascii: "_") }, "\(name)")
        }
    }

    @Test func theOpenAPIDocumentListsExactlyErrorCodeAll() {
        let document = OpenAPIDocument.build(routes: GatewayRoute.table)
        let schema = document["components"]?["schemas"]?["ErrorCode"]
        #expect(schema?["enum"]?.arrayValue?.compactMap(\.stringValue) == ErrorCode.all.map(\.rawValue))
        let statuses = (schema?["x-http-status"]?.objectValue ?? [:]).compactMapValues { $0.intValue.map(Int.init) }
        #expect(statuses == Dictionary(uniqueKeysWithValues: Self.all))
        for route in GatewayRoute.table {
            for code in route.errorCodes {
                let listed = ErrorCode.all.first { $0 == code }
                #expect(
                    listed?.httpStatus == code.httpStatus,
                    "\(route.method) \(route.path): \(code) is not in ErrorCode.all")
            }
        }
    }

    @Test func theDocumentedTableListsExactlyErrorCodeAll() throws {
        let page = try String(contentsOfFile: TestEnvironment.repositoryRoot + "/docs/api.md", encoding: .utf8)
        let rows = try #require(Self.errorTable(page), "docs/api.md has no `| code | status | when |` table")
        var documented: [String: Int] = [:]
        for (names, status) in rows {
            for name in names {
                #expect(documented.updateValue(status, forKey: name) == nil, "docs/api.md lists \(name) twice")
            }
        }
        #expect(
            documented == Dictionary(uniqueKeysWithValues: Self.all),
            "docs/api.md's error-code table and ErrorCode.all differ: only in docs/api.md \(Set(documented.keys).subtracting(ErrorCode.all.map(\.rawValue)).sorted()), only in ErrorCode.all \(Set(ErrorCode.all.map(\.rawValue)).subtracting(documented.keys).sorted())"
        )
    }

    /// Every `ErrorCode("name", httpStatus: n)` in Shared/ and Services/ is in `ErrorCode.all`
    /// with that status: a code declared anywhere is one the API answers, so it must be listed.
    @Test func everyDeclaredCodeIsInTheList() throws {
        let declared = try Self.declaredCodes(under: ["Shared", "Services"])
        #expect(!declared.isEmpty)
        for (name, status, file) in declared {
            let listed = ErrorCode.all.first { $0.rawValue == name }
            #expect(
                listed?.httpStatus == status,
                "\(file) declares \(name) (\(status)): add it to ErrorCode.all and the table of docs/api.md")
        }
    }

    // MARK: - Reading the sources

    /// The rows of the table whose header is `| code | status | when |`: each row's backticked
    /// code names and its status.
    static func errorTable(_ markdown: String) -> [([String], Int)]? {
        let lines = markdown.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard
            let header = lines.firstIndex(where: { $0.replacingOccurrences(of: " ", with: "") == "|code|status|when|" })
        else { return nil }
        var rows: [([String], Int)] = []
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count > 2, let status = Int(cells[2]) else { continue }
            let names = cells[1].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter {
                $0.offset % 2 == 1
            }.map { String($0.element) }
            rows.append((names, status))
        }
        return rows
    }

    static func declaredCodes(under folders: [String]) throws -> [(String, Int, String)] {
        let pattern = try NSRegularExpression(pattern: #"ErrorCode\("([a-z_]+)",\s*httpStatus:\s*([0-9]{3})\)"#)
        var found: [(String, Int, String)] = []
        for folder in folders {
            let root = TestEnvironment.repositoryRoot + "/" + folder
            guard let files = FileManager.default.enumerator(atPath: root) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOfFile: root + "/" + file, encoding: .utf8)
                let range = NSRange(text.startIndex..., in: text)
                for match in pattern.matches(in: text, range: range) {
                    guard let name = Range(match.range(at: 1), in: text),
                        let status = Range(match.range(at: 2), in: text)
                    else { continue }
                    found.append((String(text[name]), Int(text[status]) ?? 0, folder + "/" + file))
                }
            }
        }
        return found
    }
}
