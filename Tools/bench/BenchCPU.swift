import BuzzKitPostgres
import BuzzKitRedis
import Foundation

/// Where the machine's two cores went during one measurement of `WorkflowBench`: this process
/// (the workflow service's parts run in it), PostgreSQL's backends and auxiliary processes (read
/// from `/proc` by the pids `pg_stat_activity` lists: same machine), Redis (`INFO cpu`), and the
/// whole machine (`/proc/stat`, so what other processes took shows as the rest). Snapshots are
/// taken before and after; `line(label:per:)` prints microseconds per unit of work.
struct BenchCPU {
    /// Seconds of CPU (user + system) so far.
    var workflow: Double
    var postgres: Double
    var redis: Double
    var machine: Double
    /// Backends are read by pid; the same set is read again at the end.
    var pids: [Int32]

    static func snapshot(postgres: PostgresClient, redis: RedisClient, pids known: [Int32]? = nil) async
        -> BenchCPU
    {
        var pids = known ?? []
        if known == nil, let rows = try? await postgres.query("SELECT pid FROM pg_stat_activity") {
            pids = rows.compactMap { try? $0.decode(Int32.self, at: 0) }
        }
        return BenchCPU(
            workflow: ownSeconds(), postgres: pids.map(processSeconds).reduce(0, +),
            redis: await redisSeconds(redis), machine: machineSeconds(), pids: pids)
    }

    /// `<label> <workflow> <postgres> <redis> <machine>`: µs of CPU per unit (`units` of work
    /// between `self` and `end`); the machine's share beyond the three is other processes'.
    func line(label: String, to end: BenchCPU, units: Int) -> String {
        let n = Double(max(1, units)) / 1_000_000
        func us(_ a: Double, _ b: Double) -> String { String(Int(((b - a) / n).rounded())) }
        return
            "\(label) \(us(workflow, end.workflow)) \(us(postgres, end.postgres)) \(us(redis, end.redis)) \(us(machine, end.machine))"
    }

    private static func ownSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// utime + stime of `/proc/<pid>/stat` (fields 14 and 15, after the parenthesised name).
    private static func processSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / ticksPerSecond
    }

    /// Busy time of all cores (`cpu` line: user, nice, system, irq, softirq).
    private static func machineSeconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
        else { return 0 }
        let f = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard f.count >= 7 else { return 0 }
        return (f[0] + f[1] + f[2] + f[5] + f[6]) / ticksPerSecond
    }

    private static func redisSeconds(_ redis: RedisClient) async -> Double {
        guard let info = try? await redis.command(["INFO", "cpu"], timeout: .seconds(5)).string else { return 0 }
        var total = 0.0
        for line in info.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: ":")
            guard parts.count == 2, parts[0] == "used_cpu_sys" || parts[0] == "used_cpu_user" else { continue }
            total += Double(parts[1]) ?? 0
        }
        return total
    }
}
