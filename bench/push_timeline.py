#!/usr/bin/env python3
"""The fan-out benchmark's waiter and timeline (bench/push_fanout.sh), in one long-lived process.

`wait`: polls the sender replicas' /metrics over kept-alive HTTP connections every INTERVAL
seconds until their deliveries add up to DEVICES (the bash loop of curl and awk it replaces
cost about 10 us of the machine's CPU per delivery, taken from the run it was timing). With
--samples FILE it also writes one JSON line per poll: the time, the machine's busy CPU ticks
(per core too), each named process group's ticks, and bk:deliveries' entries added, read and
pending (one XINFO round trip to Redis).

`report`: joins those samples with the ledger's own times (each attempt's send time, each
delivery's record time, from SQL on stdin as "kind bucket count" lines) into a table per
bucket and the send's phases: start (POST to first push), body, tail (90% recorded to the last
row), with how busy the two cores were in each.
"""
import http.client
import json
import os
import socket
import sys
import time


def ticks(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except OSError:
        return 0


def children(pid):
    out = []
    try:
        for task in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, task)) as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def machine():
    busy = {}
    with open("/proc/stat") as f:
        for line in f:
            if not line.startswith("cpu"):
                break
            p = line.split()
            busy[p[0]] = int(p[1]) + int(p[2]) + int(p[3]) + int(p[6]) + int(p[7])
            if p[0] == "cpu":
                busy["iowait"], busy["softirq"], busy["steal"] = int(p[5]), int(p[7]), int(p[8])
    return busy


class Redis:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def command(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.reply()

    def line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.sock.recv(65536)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest.decode()
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode(errors="replace")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ValueError(line)


def stream_state(redis, stream, group):
    """(entries added, entries read by the group, pending in the group) of the stream."""
    info = redis.command("XINFO", "STREAM", stream)
    if not isinstance(info, list):
        return (0, 0, 0)
    added = dict(zip(info[::2], info[1::2])).get("entries-added", 0)
    read = pending = 0
    groups = redis.command("XINFO", "GROUPS", stream)
    for g in groups if isinstance(groups, list) else []:
        g = dict(zip(g[::2], g[1::2]))
        if g.get("name") == group:
            read, pending = g.get("entries-read") or 0, g.get("pending") or 0
    return (added, read, pending)


def delivered(connections, ports):
    total = 0
    for i, port in enumerate(ports):
        for attempt in (0, 1):
            try:
                if connections[i] is None:
                    connections[i] = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connections[i].request("GET", "/metrics")
                body = connections[i].getresponse().read().decode()
                break
            except (OSError, http.client.HTTPException):
                connections[i] = None
                body = ""
        for line in body.splitlines():
            if line.startswith("bk_sender_deliveries_total "):
                total += int(float(line.split()[1]))
    return total


def wait(argv):
    args = dict(a.split("=", 1) for a in argv)
    ports = [int(p) for p in args["ports"].split(",")]
    devices = int(args["devices"])
    interval = float(args.get("interval", "0.1"))
    deadline = time.time() + float(args.get("timeout", "300"))
    samples = open(args["samples"], "w") if args.get("samples") else None
    groups = {}
    for spec in args.get("pids", "").split(";"):
        if spec:
            name, pids = spec.split(":")
            groups[name] = [int(p) for p in pids.split(",") if p]
    postmaster = int(args["postmaster"]) if args.get("postmaster") else None
    redis = Redis(int(args["redis"])) if samples and args.get("redis") else None
    connections = [None] * len(ports)
    polls = 0
    while True:
        polls += 1
        now = time.time()
        total = delivered(connections, ports)
        if samples:
            row = {"t": now, "cpu": machine(), "delivered": total}
            for name, pids in groups.items():
                row[name] = sum(ticks(p) for p in pids)
            if postmaster:
                row["postgres"] = ticks(postmaster) + sum(ticks(p) for p in children(postmaster))
            if redis:
                row["stream"] = stream_state(redis, "bk:deliveries", "apns-sender")
            samples.write(json.dumps(row) + "\n")
        if total >= devices:
            break
        if now > deadline:
            print("timed out: %d of %d deliveries recorded" % (total, devices), file=sys.stderr)
            sys.exit(1)
        time.sleep(max(0.0, interval - (time.time() - now)))
    if samples:
        samples.close()
        own = os.times()
        print("waiter and sampler: %.0f ms of CPU over %d polls" % (1000 * (own.user + own.system), polls), file=sys.stderr)


def report(argv):
    samples_file, t0, t1, devices, hz = argv[0], float(argv[1]), float(argv[2]), int(argv[3]), int(argv[4])
    bucket = float(argv[5]) if len(argv) > 5 else 0.1
    samples = [json.loads(line) for line in open(samples_file)]
    pushes, recorded, exact = {}, {}, {}
    for line in sys.stdin:
        p = line.split()
        if len(p) == 2:
            exact[p[0]] = float(p[1]) - t0
        elif len(p) == 3:
            (pushes if p[0] == "push" else recorded)[int(float(p[1]))] = int(p[2])
    if not samples:
        return
    cores = len([k for k in samples[0]["cpu"] if k.startswith("cpu") and k != "cpu"])
    names = [n for n in ("postgres", "senders", "sim", "redis", "gateway") if n in samples[0]]

    def at(t, key):
        """A counter at time t, interpolated between samples."""
        def value(s):
            if key in ("machine", "iowait", "softirq", "steal"):
                return s["cpu"]["cpu" if key == "machine" else key]
            return s[key]
        if t <= samples[0]["t"]:
            return value(samples[0])
        for a, b in zip(samples, samples[1:]):
            if a["t"] <= t <= b["t"]:
                f = (t - a["t"]) / (b["t"] - a["t"]) if b["t"] > a["t"] else 0
                return value(a) + f * (value(b) - value(a))
        return value(samples[-1])

    def busy(a, b, key="machine"):
        """Share of all cores (machine) or cores' worth (a process) busy between a and b."""
        if b <= a:
            return 0.0
        used = (at(b, key) - at(a, key)) / hz
        return used / (b - a) / (cores if key in ("machine", "iowait", "softirq", "steal") else 1)

    print("timeline (ms from the POST; pushes = first attempts sent, rows = deliveries recorded, per %d ms; "
          "chunks: enqueued / read / pending; CPU as cores' worth):" % (bucket * 1000), file=sys.stderr)
    print("  %6s %7s %7s %16s %6s %s" % ("ms", "pushes", "rows", "chunks", "busy", " ".join("%8s" % n for n in names)),
          file=sys.stderr)
    last = int((t1 - t0) / bucket) + 1
    base = samples[0].get("stream", (0, 0, 0))
    for i in range(0, last + 1):
        a, b = t0 + i * bucket, t0 + (i + 1) * bucket
        s = min(samples, key=lambda s: abs(s["t"] - b))
        stream = s.get("stream", (0, 0, 0))
        chunks = "%d/%d/%d" % (stream[0] - base[0], stream[1] - base[1], stream[2])
        procs = " ".join("%8.2f" % busy(a, b, n) for n in names)
        print("  %6d %7d %7d %16s %5.0f%% %s" % (i * bucket * 1000, pushes.get(i, 0), recorded.get(i, 0), chunks,
                                                 100 * busy(a, b), procs), file=sys.stderr)
    first_push = exact.get("first_push", min(pushes) * bucket if pushes else 0)
    order = sorted(recorded)
    cumulative, t90 = 0, t1 - t0
    for i in order:
        cumulative += recorded[i]
        if cumulative >= 0.9 * devices:
            t90 = (i + 1) * bucket
            break
    chunks_total = samples[-1].get("stream", (0, 0, 0))[0] - base[0]
    fanned = next((s["t"] - t0 for s in samples if s.get("stream", (0,))[0] - base[0] >= chunks_total > 0), 0)
    end = t1 - t0
    phases = [("start", 0, first_push), ("body", first_push, t90), ("tail", t90, end)]
    text = []
    for name, a, b in phases:
        procs = ", ".join("%s %.2f" % (n, busy(t0 + a, t0 + b, n)) for n in names)
        text.append("%s %.0f-%.0f ms (%.0f ms, both cores %.0f%% busy, %.0f%% of it softirq, %.0f%% waiting on I/O, "
                    "%.0f%% stolen; %s)"
                    % (name, a * 1000, b * 1000, (b - a) * 1000, 100 * busy(t0 + a, t0 + b),
                       100 * busy(t0 + a, t0 + b, "softirq"), 100 * busy(t0 + a, t0 + b, "iowait"),
                       100 * busy(t0 + a, t0 + b, "steal"), procs))
    print("phases: " + "; ".join(text), file=sys.stderr)
    print("first push at %.0f ms, first row at %.0f ms, last row at %.0f ms, message completed at %.0f ms; fan-out: last chunk enqueued at %.0f ms (%d chunks); "
          "90%% recorded at %.0f ms; body rate %.0f deliveries/s"
          % (first_push * 1000, exact.get("first_row", 0) * 1000, end * 1000, exact.get("completed", 0) * 1000, fanned * 1000, chunks_total, t90 * 1000,
             0.9 * devices / max(1e-9, t90 - first_push) if t90 > first_push else 0), file=sys.stderr)
    replicas = sorted((k[len("last_row_"):], v) for k, v in exact.items() if k.startswith("last_row_"))
    if replicas:
        print("each replica's last row: " + ", ".join("%s at %.0f ms" % (name, t * 1000) for name, t in replicas),
              file=sys.stderr)


if __name__ == "__main__":
    {"wait": wait, "report": report}[sys.argv[1]](sys.argv[2:])
