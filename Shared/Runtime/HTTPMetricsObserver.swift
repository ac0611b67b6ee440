import BuzzKitCore
import BuzzKitHTTPServer

/// Turns each answered request into Prometheus metrics: a counter by route, method and status,
/// and a latency histogram by route. Labels use the route pattern, never the raw path.
struct HTTPMetricsObserver: Sendable {
    let metrics: MetricsRegistry

    func record(_ log: RequestLog) {
        metrics.counter("bk_http_requests_total", help: "HTTP requests answered.",
                        labels: [("method", log.method), ("route", log.route), ("status", String(log.status))])
            .increment()
        metrics.histogram("bk_http_request_duration_seconds", help: "Time to answer an HTTP request.",
                          labels: [("route", log.route)])
            .observe(log.duration)
    }
}
