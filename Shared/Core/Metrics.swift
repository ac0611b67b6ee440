import Synchronization

/// A Prometheus metrics registry: counters, gauges and histograms, rendered in the text format.
///
/// Metric handles are looked up once (by name and labels) and then updated lock-free with atomics,
/// so recording on a hot path costs a few nanoseconds. Keep label values bounded (route patterns,
/// status codes, stream names), never ids.
public final class MetricsRegistry: Sendable {
    private struct Family: Sendable {
        var name: String
        var help: String
        var type: String
        var series: [String: any MetricSeries]  // key: rendered label set
        var order: [String]
    }

    private let families = Mutex<[String: Family]>([:])
    private let familyOrder = Mutex<[String]>([])

    public init() {}

    public func counter(_ name: String, help: String, labels: [(String, String)] = []) -> Counter {
        series(name, help: help, type: "counter", labels: labels) { Counter(labels: $0) }
    }

    public func gauge(_ name: String, help: String, labels: [(String, String)] = []) -> Gauge {
        series(name, help: help, type: "gauge", labels: labels) { Gauge(labels: $0) }
    }

    /// A gauge with a fractional value (an age in seconds).
    public func floatGauge(_ name: String, help: String, labels: [(String, String)] = []) -> FloatGauge {
        series(name, help: help, type: "gauge", labels: labels) { FloatGauge(labels: $0) }
    }

    /// A histogram; `buckets` are upper bounds in the metric's unit (seconds for durations).
    public func histogram(
        _ name: String, help: String, labels: [(String, String)] = [],
        buckets: [Double] = Histogram.defaultBuckets
    ) -> Histogram {
        series(name, help: help, type: "histogram", labels: labels) { Histogram(labels: $0, buckets: buckets) }
    }

    private func series<M: MetricSeries>(
        _ name: String, help: String, type: String, labels: [(String, String)],
        make: (String) -> M
    ) -> M {
        let labelText = Self.render(labels: labels)
        return families.withLock { families in
            var family = families[name] ?? Family(name: name, help: help, type: type, series: [:], order: [])
            if let existing = family.series[labelText] as? M { return existing }
            precondition(family.type == type, "metric \(name) registered as \(family.type) and \(type)")
            let created = make(labelText)
            family.series[labelText] = created
            family.order.append(labelText)
            if families[name] == nil { familyOrder.withLock { $0.append(name) } }
            families[name] = family
            return created
        }
    }

    /// The whole registry in the Prometheus text exposition format (version 0.0.4).
    public func render() -> String {
        let names = familyOrder.withLock { $0 }
        let snapshot = families.withLock { $0 }
        var out = ""
        for name in names {
            guard let family = snapshot[name] else { continue }
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.type)\n"
            for key in family.order { family.series[key]!.render(name: name, into: &out) }
        }
        return out
    }

    /// `{key="value",...}` with `\\`, `"` and newlines escaped; byte-level (no Foundation), since
    /// it runs on every uncached series lookup.
    static func render(labels: [(String, String)]) -> String {
        guard !labels.isEmpty else { return "" }
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(64)
        for (index, (key, value)) in labels.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: key.utf8)
            out.append(UInt8(ascii: "="))
            out.append(UInt8(ascii: "\""))
            for byte in value.utf8 {
                switch byte {
                case UInt8(ascii: "\\"):
                    out.append(UInt8(ascii: "\\"))
                    out.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "\""):
                    out.append(UInt8(ascii: "\\"))
                    out.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\n"):
                    out.append(UInt8(ascii: "\\"))
                    out.append(UInt8(ascii: "n"))
                default: out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}

protocol MetricSeries: Sendable {
    func render(name: String, into out: inout String)
}

/// A value that only goes up.
public final class Counter: MetricSeries {
    private let value = Atomic<Int>(0)
    let labels: String

    init(labels: String) { self.labels = labels }

    public func increment(by amount: Int = 1) { value.add(amount, ordering: .relaxed) }
    public var current: Int { value.load(ordering: .relaxed) }

    func render(name: String, into out: inout String) { out += "\(name)\(labels) \(current)\n" }
}

/// A value that goes up and down (in-flight work, pool sizes, lag).
public final class Gauge: MetricSeries {
    private let value = Atomic<Int>(0)
    let labels: String

    init(labels: String) { self.labels = labels }

    public func set(_ newValue: Int) { value.store(newValue, ordering: .relaxed) }
    public func increment(by amount: Int = 1) { value.add(amount, ordering: .relaxed) }
    public func decrement(by amount: Int = 1) { value.subtract(amount, ordering: .relaxed) }
    public var current: Int { value.load(ordering: .relaxed) }

    func render(name: String, into out: inout String) { out += "\(name)\(labels) \(current)\n" }
}

/// A gauge whose value has a fraction (seconds), stored as the bits of a `Double`.
public final class FloatGauge: MetricSeries {
    private let bits = Atomic<UInt64>(0)
    let labels: String

    init(labels: String) { self.labels = labels }

    public func set(_ newValue: Double) { bits.store(newValue.bitPattern, ordering: .relaxed) }
    public var current: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }

    func render(name: String, into out: inout String) { out += "\(name)\(labels) \(current)\n" }
}

/// Observations counted into cumulative buckets, with their sum.
public final class Histogram: MetricSeries {
    public static let defaultBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
    ]

    private struct State {
        var counts: [Int]
        var total = 0
        var sum = 0.0
    }

    let labels: String
    let bounds: [Double]
    private let state: Mutex<State>

    init(labels: String, buckets: [Double]) {
        self.labels = labels
        self.bounds = buckets.sorted()
        self.state = Mutex(State(counts: Array(repeating: 0, count: buckets.count)))
    }

    public func observe(_ value: Double) {
        let index = bounds.firstIndex(where: { value <= $0 })
        state.withLock { state in
            if let index { state.counts[index] += 1 }
            state.total += 1
            state.sum += value
        }
    }

    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) / 1e18)
    }

    public var count: Int { state.withLock { $0.total } }

    func render(name: String, into out: inout String) {
        let snapshot = state.withLock { $0 }
        let inner = labels.isEmpty ? "" : String(labels.dropFirst().dropLast()) + ","
        var cumulative = 0
        for (index, bound) in bounds.enumerated() {
            cumulative += snapshot.counts[index]
            out += "\(name)_bucket{\(inner)le=\"\(bound)\"} \(cumulative)\n"
        }
        out += "\(name)_bucket{\(inner)le=\"+Inf\"} \(snapshot.total)\n"
        out += "\(name)_sum\(labels) \(snapshot.sum)\n"
        out += "\(name)_count\(labels) \(snapshot.total)\n"
    }
}
