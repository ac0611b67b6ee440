/// The `apns-push-type` header: what kind of notification a request carries. APNs checks it
/// against the topic (`liveactivity` needs `<bundle>.push-type.liveactivity`, ...).
public enum APNsPushType: String, Sendable, Hashable, CaseIterable {
    case alert
    /// A silent push (`content-available`); priority must be 5 (or 1).
    case background
    case liveactivity
    case pushtostart
    case location
    case voip
    case complication
    case fileprovider
    case mdm
    case pushtotalk
    case widgets
}
