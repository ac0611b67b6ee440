extension StreamConsumer {
    /// How a consumer-group runner reads, retries and gives up. Every knob has a default.
    public struct Configuration: Sendable {
        public var stream: String
        public var group: String
        /// Unique per process replica (e.g. host name + pid). Entries it held when it died are
        /// reclaimed by the others after `claimIdleTime`.
        public var consumer: String
        /// Entries per XREADGROUP / XAUTOCLAIM. Default 100.
        public var batchSize: Int = 100
        /// Handlers running at once within a batch. Default 16.
        public var maxConcurrentHandlers: Int = 16
        /// XREADGROUP BLOCK time; also the longest `stop()` can wait for a read in flight that
        /// `CLIENT UNBLOCK` missed. Default 2 s.
        public var blockTime: Duration = .seconds(2)
        /// Entries pending this long with any consumer are taken over (XAUTOCLAIM) and reprocessed.
        /// A consumer renews its claim on the entries its handlers are working on every third of
        /// this time, so a slow handler keeps its entries; only a stopped or hung consumer loses
        /// them. Default 60 s.
        public var claimIdleTime: Duration = .seconds(60)
        /// How often to look for such entries (also done once at startup). Default 15 s.
        public var reclaimInterval: Duration = .seconds(15)
        /// Deliveries after which an entry that still fails goes to the dead-letter stream. Default 5.
        public var maxDeliveries: Int = 5
        /// Default `{<stream>}:dead`: in the stream's Redis Cluster slot (`RedisHashTag`), since
        /// the dead-letter script writes it and acks the stream in one step.
        public var deadLetterStream: String
        /// Hash of entry id -> last handler error. Default `{<stream>}:<group>:errors` (the
        /// stream's slot, for the same reason).
        public var errorsKey: String
        /// Where a newly created group starts: "0" (whole stream, default) or "$" (only new entries).
        public var groupStartID: String = "0"
        /// First delay after a Redis error, doubled up to `maxRetryBackoff`. Defaults 100 ms / 5 s.
        public var retryBackoff: Duration = .milliseconds(100)
        public var maxRetryBackoff: Duration = .seconds(5)
        /// Read the next batch while this one's handlers run. Default true: the read's round trip
        /// overlaps the work. Turn it off when several consumers of one group share a process
        /// for latency (the liveactivity service's lanes): an entry read ahead waits for the batch
        /// in front of it, while a consumer blocked in its read would have taken it at once.
        public var readAhead = true
        /// Handle entries one after another in a window of `maxConcurrentHandlers` (a handler per
        /// entry only): each handler's slot takes the next entry as soon as it ends, and entries
        /// are acked as they end, instead of a batch waiting for its slowest handler before the
        /// next batch starts. Reads what fills the free slots plus one entry ready behind them
        /// (at most `batchSize` at a time). Default false. For handlers whose time varies and that keep others waiting on them (the
        /// sender's chunks: a claim, APNs and a record each), a batch's slowest handler left the
        /// other slots empty.
        public var continuous = false

        public init(stream: String, group: String, consumer: String) {
            self.stream = stream
            self.group = group
            self.consumer = consumer
            self.deadLetterStream = RedisHashTag.sibling(of: stream, "dead")
            self.errorsKey = RedisHashTag.sibling(of: stream, "\(group):errors")
        }
    }

    /// Counters since `run()` started (for metrics and tests).
    public struct Statistics: Sendable, Equatable {
        /// Entries whose handler succeeded and that were acked.
        public var processed = 0
        /// Handler failures left pending for a retry.
        public var failed = 0
        /// Entries moved to the dead-letter stream.
        public var deadLettered = 0
        /// Entries taken over by XAUTOCLAIM.
        public var reclaimed = 0
        /// Redis errors the loop recovered from.
        public var redisErrors = 0
    }
}
