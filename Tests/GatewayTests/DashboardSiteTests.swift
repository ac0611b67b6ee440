import BuzzKitCore
import BuzzKitHTTPClient
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import GatewayApp
import Testing

/// The dashboard's static files as the gateway serves them: content types, caching, HEAD,
/// security headers, no way out of the folder, and pages that load nothing from another host and
/// put no data into markup.
@Suite("Dashboard static files", .requiresTestStack)
struct DashboardSiteTests {
    func get(
        _ h: GatewayHarness, _ path: String, method: HTTPMethod = .GET,
        headers: [String: String] = [:]
    ) async throws -> HTTPClientResponse {
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name: name, value: value) }
        return try await h.client.execute(HTTPClientRequest(method: method, url: h.baseURL + path, headers: fields))
    }

    @Test func servesTheFilesWithTypesCachingAndSecurityHeaders() async throws {
        try await withGateway { h in
            let root = try await get(h, "/")
            #expect(root.status == 302 && root.headers["Location"] == "/dashboard")
            for path in ["/dashboard", "/dashboard/", "/dashboard/index.html"] {
                let page = try await get(h, path)
                #expect(page.status == 200, "\(path)")
                #expect(page.headers["Content-Type"] == "text/html; charset=utf-8")
                #expect(
                    String(decoding: page.body, as: UTF8.self).contains(
                        "<script type=\"module\" src=\"/dashboard/app.js\">"))
                let csp = page.headers["Content-Security-Policy"] ?? ""
                #expect(
                    csp.contains("default-src 'self'") && csp.contains("script-src 'self'")
                        && !csp.contains("unsafe-inline"))
                #expect(csp.contains("frame-ancestors 'none'"))
                #expect(page.headers["X-Content-Type-Options"] == "nosniff")
                #expect(page.headers["Cache-Control"] == "no-cache")
            }
            let script = try await get(h, "/dashboard/app.js")
            #expect(script.status == 200 && script.headers["Content-Type"] == "text/javascript; charset=utf-8")
            let style = try await get(h, "/dashboard/style.css")
            #expect(style.status == 200 && style.headers["Content-Type"] == "text/css; charset=utf-8")
            let icon = try await get(h, "/dashboard/favicon.svg")
            #expect(icon.headers["Content-Type"] == "image/svg+xml")
            // The server's vocabularies, written by the gateway (DashboardVocabularyTests has the rest).
            let vocabulary = try await get(h, "/dashboard/lib/vocabulary.js")
            #expect(vocabulary.status == 200 && vocabulary.headers["Content-Type"] == "text/javascript; charset=utf-8")
            #expect(vocabulary.headers["Content-Security-Policy"] == DashboardSite.contentSecurityPolicy)
            let module = String(decoding: vocabulary.body, as: UTF8.self)
            #expect(module.contains("export const deliveryStatus = vocabulary.deliveryStatus;"))
            #expect(module.contains("\"invalid_token\""))

            // ETag revalidation: 304 without a body while the file is unchanged.
            let etag = try #require(script.headers["ETag"])
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""))
            let again = try await get(h, "/dashboard/app.js", headers: ["If-None-Match": etag])
            #expect(again.status == 304 && again.body.isEmpty && again.headers["ETag"] == etag)
            let listed = try await get(h, "/dashboard/app.js", headers: ["If-None-Match": "\"other\", W/\(etag)"])
            #expect(listed.status == 304)
            let stale = try await get(h, "/dashboard/app.js", headers: ["If-None-Match": "\"stale\""])
            #expect(stale.status == 200 && stale.body == script.body)

            // HEAD: the same headers, no body.
            let head = try await get(h, "/dashboard/app.js", method: .HEAD)
            #expect(head.status == 200 && head.body.isEmpty && head.headers["ETag"] == etag)
            #expect(head.headers["Content-Length"] == String(script.body.count))
        }
    }

    @Test func nothingOutsideTheFolderIsReachable() async throws {
        try await withGateway { h in
            // Sent byte for byte (curl would remove the dot segments before sending).
            for path in [
                "/dashboard/../openapi.json", "/dashboard/%2e%2e/openapi.json", "/dashboard/..%2fPackage.swift",
                "/dashboard/missing.js", "/dashboard/lib", "/dashboard/.hidden", "/dashboard//etc/passwd",
                "/dashboard/lib/../app.js", "/dashboard/app.js%00.png", "/dashboard/./app.js",
                "/dashboard/../../../../etc/passwd"
            ] {
                let (status, body) = try await rawGet(port: h.server.port, path: path)
                #expect(status == 404, "\(path) answered \(status)")
                #expect(!body.contains("import ") && !body.contains("root:"), "\(path)")
            }
            let post = try await get(h, "/dashboard/app.js", method: .POST)
            #expect(post.status == 405)
        }
    }

    /// One HTTP/1.1 GET with the path exactly as given; the status and the body as text.
    func rawGet(port: Int, path: String) async throws -> (Int, String) {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                defer { close(fd) }
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_port = UInt16(port).bigEndian
                address.sin_addr.s_addr = inet_addr("127.0.0.1")
                let connected = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                guard connected == 0 else {
                    continuation.resume(throwing: HarnessError(description: "connect failed"))
                    return
                }
                let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
                _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if n <= 0 { break }
                    received += buffer[0..<n]
                }
                let text = String(decoding: received, as: UTF8.self)
                let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
                continuation.resume(returning: (status, text))
            }
        }
    }

    /// A folder of the operator's own (BUZZKIT_DASHBOARD_DIR): symlinks and hidden files are skipped.
    @Test func aFolderOfOneselfServesItsRegularFilesOnly() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(TestEnvironment.uniqueName("site"))
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("pages"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try Data("<!doctype html>".utf8).write(to: dir.appendingPathComponent("index.html"))
        try Data("export {}".utf8).write(to: dir.appendingPathComponent("pages/a.js"))
        try Data("secret".utf8).write(to: dir.appendingPathComponent(".env"))
        try Data("x".utf8).write(to: dir.appendingPathComponent("notes.md"))
        try FileManager.default.createSymbolicLink(
            atPath: dir.appendingPathComponent("passwd.txt").path, withDestinationPath: "/etc/passwd")
        let site = try DashboardSite(directory: dir)
        #expect(
            site.paths == [
                "/dashboard", "/dashboard/index.html", "/dashboard/lib/vocabulary.js", "/dashboard/pages/a.js"
            ])
        let empty = FileManager.default.temporaryDirectory.appendingPathComponent(TestEnvironment.uniqueName("empty"))
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        #expect(throws: DashboardSiteError.self) { try DashboardSite(directory: empty) }
    }

    /// Nothing is loaded from another host, there is no inline script or style, and no page builds
    /// markup from strings (`innerHTML`, `outerHTML`, `insertAdjacentHTML`, `document.write`).
    @Test func thePagesLoadNothingFromElsewhereAndNeverParseDataAsMarkup() throws {
        let root = URL(fileURLWithPath: TestEnvironment.repositoryRoot).appendingPathComponent(
            "Services/gateway/App/Dashboard")
        let site = try DashboardSite(directory: root)
        #expect(site.paths.count >= 15)
        let walker = try #require(FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil))
        var checked = 0
        for case let url as URL in walker where ["js", "html", "css"].contains(url.pathExtension) {
            let text = try String(contentsOf: url, encoding: .utf8)
            let name = url.lastPathComponent
            checked += 1
            for forbidden in [
                "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "@import"
            ] {
                #expect(!text.contains(forbidden), "\(name) uses \(forbidden)")
            }
            for pattern in [
                #"(import|from)\s*['"]https?:"#, #"url\(\s*['"]?https?:"#, #"(src|href)\s*=\s*["']?(https?:)?//"#
            ] {
                #expect(
                    text.range(of: pattern, options: .regularExpression) == nil,
                    "\(name) loads from another host (\(pattern))")
            }
            if url.pathExtension == "html" {
                #expect(
                    text.range(of: #"<script(?![^>]*\bsrc=)"#, options: .regularExpression) == nil,
                    "\(name) has an inline script")
                #expect(
                    text.range(of: #"\sstyle\s*="#, options: .regularExpression) == nil, "\(name) has an inline style")
                #expect(text.range(of: #"<style"#, options: .regularExpression) == nil, "\(name) has a style element")
                #expect(
                    text.range(of: #"\son[a-z]+\s*="#, options: .regularExpression) == nil,
                    "\(name) has an inline handler")
            }
            if url.pathExtension == "js" {
                #expect(
                    text.range(of: #"setAttribute\(\s*['"](style|on)"#, options: .regularExpression) == nil,
                    "\(name) sets a style or handler attribute")
            }
        }
        #expect(checked >= 15)
    }
}
