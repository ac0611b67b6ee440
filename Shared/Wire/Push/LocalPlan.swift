/// A notification a workflow hands the device to schedule itself (`bk.local` in a silent push).
///
/// The SDK schedules it with a calendar trigger built from `fireAt`, a wall-clock moment in the
/// device's own timezone; it tracks `$local.scheduled` with `id` as the acknowledgement, and
/// removes the notification when the app tracks one of the `cancelOn` events.
public struct LocalPlan: Sendable, Hashable {
    /// Wall-clock date components (no timezone): the moment in whatever zone the device is in.
    public struct FireDate: Sendable, Hashable {
        public var year: Int
        public var month: Int
        public var day: Int
        public var hour: Int
        public var minute: Int
        /// Default 0 (and then left out of the payload).
        public var second: Int

        public init(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int = 0) {
            self.year = year
            self.month = month
            self.day = day
            self.hour = hour
            self.minute = minute
            self.second = second
        }
    }

    /// The plan's id (the local notification's identifier, `localId` of `$local.scheduled`);
    /// workflows start it with the run id so `bk.cancel` can match it by prefix.
    public var id: String
    public var fireAt: FireDate
    public var title: String?
    public var body: String?
    /// Custom data, exactly as sent. Default empty.
    public var data: [String: JSONValue]
    public var deepLink: String?
    /// Event names that cancel the pending notification on the device. Default empty.
    public var cancelOn: [String]
    /// The message this plan belongs to, so an open is tracked like any other push.
    public var messageId: String?

    public init(
        id: String, fireAt: FireDate, title: String? = nil, body: String? = nil,
        data: [String: JSONValue] = [:], deepLink: String? = nil, cancelOn: [String] = [],
        messageId: String? = nil
    ) {
        self.id = id
        self.fireAt = fireAt
        self.title = title
        self.body = body
        self.data = data
        self.deepLink = deepLink
        self.cancelOn = cancelOn
        self.messageId = messageId
    }
}

/// Central cancellation of locally scheduled notifications (`bk.cancel` in a silent push): every
/// pending notification whose id equals `runId` or starts with it is removed.
public struct CancelPlan: Sendable, Hashable {
    public var runId: String

    public init(runId: String) { self.runId = runId }
}
