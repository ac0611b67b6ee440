import BuzzKitCore
import Testing

@Suite struct MetricsTests {
    @Test func rendersPrometheusTextFormat() {
        let registry = MetricsRegistry()
        let ok = registry.counter("bk_requests_total", help: "Requests.", labels: [("status", "200")])
        ok.increment()
        ok.increment(by: 2)
        registry.counter("bk_requests_total", help: "Requests.", labels: [("status", "500")]).increment()
        registry.gauge("bk_in_flight", help: "In flight.").set(3)
        let latency = registry.histogram("bk_latency_seconds", help: "Latency.", buckets: [0.1, 1])
        latency.observe(0.05)
        latency.observe(0.5)
        latency.observe(5)
        let text = registry.render()
        #expect(text.contains("# TYPE bk_requests_total counter\n"))
        #expect(text.contains("bk_requests_total{status=\"200\"} 3\n"))
        #expect(text.contains("bk_requests_total{status=\"500\"} 1\n"))
        #expect(text.contains("bk_in_flight 3\n"))
        #expect(text.contains("bk_latency_seconds_bucket{le=\"0.1\"} 1\n"))
        #expect(text.contains("bk_latency_seconds_bucket{le=\"1.0\"} 2\n"))
        #expect(text.contains("bk_latency_seconds_bucket{le=\"+Inf\"} 3\n"))
        #expect(text.contains("bk_latency_seconds_count 3\n"))
    }

    @Test func sameNameAndLabelsGiveTheSameSeries() {
        let registry = MetricsRegistry()
        registry.counter("c", help: "h", labels: [("a", "1")]).increment()
        registry.counter("c", help: "h", labels: [("a", "1")]).increment()
        #expect(registry.counter("c", help: "h", labels: [("a", "1")]).current == 2)
    }

    @Test func labelValuesAreEscaped() {
        let registry = MetricsRegistry()
        registry.counter("c", help: "h", labels: [("route", "a\"b\\c")]).increment()
        #expect(registry.render().contains(#"c{route="a\"b\\c"} 1"#))
    }
}
