import BuzzKitCore
import BuzzKitCrypto
import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

/// The dashboard's static files (plain HTML, CSS and JavaScript modules, no build step), served
/// by the gateway at `/dashboard` from memory.
///
/// Every file of the folder is read once when the gateway starts, and each becomes one literal
/// route (`/dashboard/app.js`): a path that is not one of them is the router's `404`, so no
/// request path ever reaches the file system (no traversal, no symlink, no hidden file). Files
/// with an extension outside `contentTypes` are not served. Answers carry the content type,
/// `ETag` (a digest of the bytes) with `Cache-Control: no-cache` (a browser revalidates and gets
/// `304` while the file is unchanged), a strict `Content-Security-Policy` (scripts, styles,
/// images and API calls from this origin only; no inline script or style, no framing) and
/// `X-Content-Type-Options: nosniff`. `HEAD` is answered like `GET` without the body (router).
/// `/dashboard` (and `/dashboard/`) is `index.html`; `/` redirects to `/dashboard`. One file is
/// not read from the folder but written here: `lib/vocabulary.js`, the server's own status lists
/// (`DashboardVocabulary`).
public struct DashboardSite: Sendable {
    public static let mount = "/dashboard"
    /// At most this many files and bytes are loaded (a folder pointed at by mistake fails loudly).
    public static let maxFiles = 500
    public static let maxBytes = 32 << 20

    static let contentTypes: [String: String] = [
        "html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon", "json": "application/json; charset=utf-8",
        "txt": "text/plain; charset=utf-8", "woff2": "font/woff2"
    ]

    /// `default-src 'self'`, nothing inline, nothing from another host, no plugins, no framing.
    public static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    struct File: Sendable {
        var bytes: [UInt8]
        var contentType: String
        var etag: String
    }

    /// By URL path (`/dashboard/app.js`).
    let files: [String: File]

    /// The files bundled with the gateway (`Services/gateway/App/Dashboard`, a resource of the target).
    public static var bundledDirectory: URL {
        Bundle.module.url(forResource: "Dashboard", withExtension: nil)
            ?? Bundle.module.bundleURL.appendingPathComponent("Dashboard")
    }

    /// Reads every servable file under `directory`. Throws when the folder cannot be read, has no
    /// `index.html`, or is over the limits.
    public init(directory: URL) throws {
        var files: [String: File] = [:]
        var total = 0
        let root = directory.standardizedFileURL.resolvingSymlinksInPath()
        guard
            let walker = FileManager.default.enumerator(
                at: root, includingPropertiesForKeys: [.isRegularFileKey, .isSymbolicLinkKey],
                options: [.skipsHiddenFiles])
        else {
            throw DashboardSiteError(description: "cannot read the dashboard folder \(root.path)")
        }
        for case let url as URL in walker {
            let values = try url.resourceValues(forKeys: [.isRegularFileKey, .isSymbolicLinkKey])
            guard values.isRegularFile == true, values.isSymbolicLink != true else { continue }
            let relative = url.standardizedFileURL.resolvingSymlinksInPath().path.dropFirst(root.path.count)
            let components = relative.split(separator: "/")
            guard !components.isEmpty, components.allSatisfy(Self.isSafeComponent),
                let type = Self.contentTypes[url.pathExtension.lowercased()]
            else { continue }
            let bytes = Array(try Data(contentsOf: url))
            total += bytes.count
            guard files.count < Self.maxFiles, total <= Self.maxBytes else {
                throw DashboardSiteError(
                    description:
                        "the dashboard folder \(root.path) is over \(Self.maxFiles) files or \(Self.maxBytes) bytes")
            }
            files[Self.mount + "/" + components.joined(separator: "/")] = File(
                bytes: bytes, contentType: type, etag: Self.etag(bytes))
        }
        let vocabulary = Array(DashboardVocabulary.module.utf8)
        files[DashboardVocabulary.path] = File(
            bytes: vocabulary, contentType: "text/javascript; charset=utf-8", etag: Self.etag(vocabulary))
        guard let index = files[Self.mount + "/index.html"] else {
            throw DashboardSiteError(description: "the dashboard folder \(root.path) has no index.html")
        }
        files[Self.mount] = index
        self.files = files
    }

    /// A strong validator: a digest of the bytes.
    static func etag(_ bytes: [UInt8]) -> String {
        "\"" + Hex.string(Digest.sha256(bytes).prefix(12)) + "\""
    }

    /// A path component that names a file the site may serve: letters, digits, `.`, `_`, `-`, not
    /// starting with a dot.
    static func isSafeComponent(_ component: Substring) -> Bool {
        guard let first = component.utf8.first, first != UInt8(ascii: ".") else { return false }
        return component.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    /// The URL paths served, sorted.
    public var paths: [String] { files.keys.sorted() }

    /// Registers `/`, `/dashboard` and one route per file (answered on the network thread: the
    /// bytes are in memory).
    public func register(on router: inout Router) {
        router.on(
            "GET", "/",
            sync: { _ in
                Response(status: 302, headers: ["Location": Self.mount, "Cache-Control": "no-cache"], body: [])
            })
        for (path, file) in files {
            router.on("GET", path, sync: { request in Self.answer(file, request) })
        }
    }

    static func answer(_ file: File, _ request: Request) -> Response {
        var headers: HTTPHeaders = [
            "ETag": file.etag, "Cache-Control": "no-cache", "Content-Security-Policy": contentSecurityPolicy,
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
            "Cross-Origin-Opener-Policy": "same-origin"
        ]
        if let tags = request.headers["If-None-Match"], matches(tags, file.etag) {
            return Response(status: 304, headers: headers, body: [])
        }
        headers.add(name: "Content-Type", value: file.contentType)
        return Response(status: 200, headers: headers, body: file.bytes)
    }

    /// Whether an `If-None-Match` value names `etag` (a list, weak tags compared weakly, or `*`).
    static func matches(_ header: String, _ etag: String) -> Bool {
        for candidate in header.split(separator: ",") {
            var tag = HTTPHeaders.trimmingWhitespace(String(candidate))
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            if tag == etag { return true }
        }
        return false
    }
}

/// The dashboard folder could not be loaded (the gateway does not start without its dashboard).
public struct DashboardSiteError: Error, Sendable, CustomStringConvertible {
    public var description: String
}
