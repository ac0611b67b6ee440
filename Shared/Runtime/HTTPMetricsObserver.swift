import BuzzKitCore
import BuzzKitHTTPServer
import Synchronization

/// Turns each answered request into Prometheus metrics: a counter by route, method and status,
/// and a latency histogram by route. Labels use the route pattern, never the raw path.
///
/// The series handles are cached per (method, route, status), so a request costs one dictionary
/// lookup and two atomic updates instead of rebuilding and escaping label text (that was ~5% of
/// the gateway's CPU). The cache is bounded the way the labels are: route patterns, methods and
/// statuses; past `maxCachedSeries` (default 4096) it stops caching and looks up as before.
final class HTTPMetricsObserver: Sendable {
    private struct Key: Hashable {
        var method: String
        var route: String
        var status: Int
    }

    private struct Handles {
        var requests: Counter
        var duration: Histogram
    }

    let metrics: MetricsRegistry
    let maxCachedSeries: Int
    private let cache = Mutex<[Key: Handles]>([:])

    init(metrics: MetricsRegistry, maxCachedSeries: Int = 4096) {
        self.metrics = metrics
        self.maxCachedSeries = maxCachedSeries
    }

    func record(_ log: RequestLog) {
        let key = Key(method: log.method, route: log.route, status: log.status)
        let handles = cache.withLock { $0[key] } ?? lookUp(key)
        handles.requests.increment()
        handles.duration.observe(log.duration)
    }

    private func lookUp(_ key: Key) -> Handles {
        let handles = Handles(
            requests: metrics.counter(
                "bk_http_requests_total", help: "HTTP requests answered.",
                labels: [("method", key.method), ("route", key.route), ("status", String(key.status))]),
            duration: metrics.histogram(
                "bk_http_request_duration_seconds", help: "Time to answer an HTTP request.",
                labels: [("route", key.route)]))
        cache.withLock { cache in
            if cache.count < maxCachedSeries { cache[key] = handles }
        }
        return handles
    }
}
