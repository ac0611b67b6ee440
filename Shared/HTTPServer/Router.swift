import BuzzKitWire

/// Maps method + path to handlers. Build it before starting the server; it is a value, so the
/// server keeps the copy it was given.
///
/// Patterns are literal segments and `:name` parameters: `/v1/subscribers/:id/devices/:token`.
/// Parameters are percent-decoded; a trailing slash is ignored. Literal-only patterns are looked up
/// in a dictionary; patterns with parameters are tried in registration order. An unknown path is
/// answered `404 not_found`, a known path with another method `405 method_not_allowed` with an
/// `Allow` header. `HEAD` falls back to the `GET` route (the server sends no body for `HEAD`).
///
/// Middleware (`use`) wraps the routes registered AFTER it, outermost first, so a service can
/// register `/healthz` and `/metrics` before its auth middleware.
///
/// Handlers are `async`, run as tasks on the cooperative pool. A route registered with `sync:`
/// and no middleware is answered directly on the server's network thread without a task hop:
/// use it only for quick, non-blocking work (health checks, metrics, static answers).
///
/// A route registered with `answering:` (and no middleware) is decided on the network thread too,
/// but may answer later: its handler returns an `Answer` (a response now, an async handler to run
/// as a task, or a deferred start that gets a `Responder`). Hot routes use it to skip the task hop
/// when caches can answer, and to hand many requests to one batch without a task per request.
public struct Router: Sendable {
    public typealias Handler = @Sendable (Request) async throws -> Response
    public typealias SyncHandler = @Sendable (Request) throws -> Response
    public typealias AnsweringHandler = @Sendable (Request) -> Answer
    public typealias Next = @Sendable (Request) async throws -> Response
    public typealias Middleware = @Sendable (Request, Next) async throws -> Response

    struct Route: Sendable {
        var method: String
        var pattern: String
        /// The handler wrapped in the middleware that was registered before it.
        var handler: Handler
        /// Set when the route can be answered on the network thread (sync handler, no middleware).
        var inline: SyncHandler?
        /// Set when the route decides on the network thread how to answer (no middleware).
        var answering: AnsweringHandler? = nil
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    struct PatternEntry: Sendable {
        var pattern: String
        var segments: [Segment]
        var routes: [String: Route]
    }

    enum Match: Sendable {
        case found(Route, parameters: [String: String])
        case methodNotAllowed(allow: [String])
        case notFound
    }

    private var entries: [PatternEntry] = []
    private var staticIndex: [String: Int] = [:]
    private var dynamicIndices: [Int] = []
    /// Every entry's index by its segment count, in registration order: a path is only bound
    /// against patterns of its own length.
    private var indicesBySegmentCount: [Int: [Int]] = [:]
    private var middleware: [Middleware] = []

    /// When true, a path that is a literal route (`/v1/messages/preview`) is that resource alone:
    /// another method is `405` with the literal route's methods, never a fall-through to a pattern
    /// it also fits (`/v1/messages/:id` with id `preview`). What an API document says, so the
    /// gateway sets it. Default false: the fall-through.
    public var literalPathsAreResources = false

    public init() {}

    // MARK: - Registration

    /// Adds middleware around every route registered after this call.
    public mutating func use(_ middleware: @escaping Middleware) {
        self.middleware.append(middleware)
    }

    /// Registers an async handler. Registering the same method and pattern again replaces it.
    public mutating func on(_ method: String, _ pattern: String, _ handler: @escaping Handler) {
        add(method: method, pattern: pattern, handler: wrap(handler), inline: nil)
    }

    /// Registers a synchronous handler, answered on the network thread when no middleware applies.
    /// It must not block (no I/O, no locks held for long).
    public mutating func on(_ method: String, _ pattern: String, sync handler: @escaping SyncHandler) {
        add(
            method: method, pattern: pattern, handler: wrap({ try handler($0) }),
            inline: middleware.isEmpty ? handler : nil)
    }

    /// Registers a handler that decides on the network thread how to answer (see `Answer`). It must
    /// not block. Behind middleware it runs as an ordinary async handler (same answers, with a task).
    public mutating func on(_ method: String, _ pattern: String, answering handler: @escaping AnsweringHandler) {
        let asHandler: Handler = { request in try await handler(request).response(for: request) }
        add(
            method: method, pattern: pattern, handler: wrap(asHandler), inline: nil,
            answering: middleware.isEmpty ? handler : nil)
    }

    public mutating func get(_ pattern: String, _ handler: @escaping Handler) { on("GET", pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping Handler) { on("POST", pattern, handler) }
    public mutating func put(_ pattern: String, _ handler: @escaping Handler) { on("PUT", pattern, handler) }
    public mutating func patch(_ pattern: String, _ handler: @escaping Handler) { on("PATCH", pattern, handler) }
    public mutating func delete(_ pattern: String, _ handler: @escaping Handler) { on("DELETE", pattern, handler) }
    public mutating func get(_ pattern: String, sync handler: @escaping SyncHandler) {
        on("GET", pattern, sync: handler)
    }
    public mutating func post(_ pattern: String, sync handler: @escaping SyncHandler) {
        on("POST", pattern, sync: handler)
    }

    private func wrap(_ handler: @escaping Handler) -> Handler {
        var next = handler
        for m in middleware.reversed() {
            let inner = next
            next = { request in try await m(request, inner) }
        }
        return next
    }

    private mutating func add(
        method: String, pattern: String, handler: @escaping Handler, inline: SyncHandler?,
        answering: AnsweringHandler? = nil
    ) {
        let normalized = Self.normalize(pattern)
        let segments = Self.split(normalized).map { piece -> Segment in
            piece.first == ":" ? .parameter(String(piece.dropFirst())) : .literal(String(piece))
        }
        let method = method.uppercased()
        let route = Route(method: method, pattern: normalized, handler: handler, inline: inline, answering: answering)
        if let index = entries.firstIndex(where: { $0.segments == segments }) {
            entries[index].routes[method] = route
            return
        }
        entries.append(PatternEntry(pattern: normalized, segments: segments, routes: [method: route]))
        let index = entries.count - 1
        indicesBySegmentCount[segments.count, default: []].append(index)
        if segments.allSatisfy({ if case .literal = $0 { true } else { false } }) {
            staticIndex[normalized] = index
        } else {
            dynamicIndices.append(index)
        }
    }

    // MARK: - Matching

    func match(method: String, path rawPath: String) -> Match {
        let path = Self.normalize(rawPath)
        var allow: Set<String> = []
        let staticMatch = staticIndex[path]
        if let index = staticMatch {
            if let route = Self.route(in: entries[index], for: method) { return .found(route, parameters: [:]) }
            allow.formUnion(entries[index].routes.keys)
        }
        let literalOnly = staticMatch != nil && literalPathsAreResources
        if !literalOnly && (!dynamicIndices.isEmpty || (staticMatch == nil && path.utf8.contains(UInt8(ascii: "%")))) {
            let pieces = Self.decodedPieces(path)
            for index in indicesBySegmentCount[pieces.count] ?? [] where staticMatch != index {
                guard let parameters = Self.bind(entries[index].segments, to: pieces) else { continue }
                if let route = Self.route(in: entries[index], for: method) {
                    return .found(route, parameters: parameters)
                }
                allow.formUnion(entries[index].routes.keys)
            }
        }
        if allow.isEmpty { return .notFound }
        if allow.contains("GET") { allow.insert("HEAD") }
        return .methodNotAllowed(allow: allow.sorted())
    }

    private static func route(in entry: PatternEntry, for method: String) -> Route? {
        if let route = entry.routes[method] { return route }
        if method == "HEAD" { return entry.routes["GET"] }
        return nil
    }

    private static func bind(_ segments: [Segment], to pieces: [String]) -> [String: String]? {
        guard segments.count == pieces.count else { return nil }
        // Literals first: most candidates fail there, before any dictionary is built.
        for (segment, piece) in zip(segments, pieces) {
            if case .literal(let literal) = segment, literal != piece { return nil }
        }
        var parameters: [String: String] = [:]
        for (segment, piece) in zip(segments, pieces) {
            switch segment {
            case .literal(let literal): if literal != piece { return nil }
            case .parameter(let name):
                if piece.isEmpty { return nil }
                parameters[name] = piece
            }
        }
        return parameters
    }

    static func normalize(_ path: String) -> String {
        let utf8 = path.utf8
        if utf8.first == UInt8(ascii: "/") && (utf8.count == 1 || utf8.last != UInt8(ascii: "/")) {
            return path  // the common case: nothing to change, no copy
        }
        var path = utf8.first == UInt8(ascii: "/") ? path : "/" + path
        while path.utf8.count > 1 && path.utf8.last == UInt8(ascii: "/") { path.removeLast() }
        return path
    }

    /// The segments after the leading `/`, percent-decoded: what `split` gives, decoded, in one
    /// byte-level pass (the generic `split` was half the cost of matching a request).
    private static func decodedPieces(_ path: String) -> [String] {
        let utf8 = path.utf8
        var pieces: [String] = []
        pieces.reserveCapacity(6)
        guard var start = utf8.indices.first.map({ utf8.index(after: $0) }) else { return [""] }
        var index = start
        while index != utf8.endIndex {
            if utf8[index] == UInt8(ascii: "/") {
                pieces.append(PercentDecoding.decode(utf8[start..<index]))
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        pieces.append(PercentDecoding.decode(utf8[start..<utf8.endIndex]))
        return pieces
    }

    private static func split(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().filter { _ in true }
    }
}
