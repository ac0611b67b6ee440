/// What a message is, as `messages.kind` stores it and the message reads answer it: it decides
/// how the sender turns the stored `content` into an APNs request.
///
/// - `push`: an ordinary notification (`content` is what `POST /v1/messages` takes).
/// - `liveActivity`: a Live Activity send (`content` is `{"liveActivity": <the request>}`), sent
///   by the liveactivity service, never by apns-sender.
/// - `localPlan`: a workflow's local window handed to the devices (`content` is
///   `{"local": <the plan as bk.local carries it>}`): a silent push with `bk.local`.
/// - `localCancel`: a workflow run cancelled centrally (`content` is `{"cancel": {"runId": ...}}`):
///   a silent push with `bk.cancel`, removing what that run scheduled on the devices.
///
/// The raw values are the SQL `CHECK` list of `messages.kind` (migrations 0013 and 0015);
/// `StatusCheckTests` holds the two equal.
public enum MessageKind: String, Sendable, Hashable, CaseIterable {
    case push
    case liveActivity = "live_activity"
    case localPlan = "local_plan"
    case localCancel = "local_cancel"
}
