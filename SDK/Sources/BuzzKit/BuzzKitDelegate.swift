import BuzzKitWire
import Foundation

/// Receives what the app may want to decide or know about an opened notification.
///
/// Every method has a default (return false / do nothing). The SDK keeps a strong reference to
/// the delegate, so `BuzzKit.delegate = NotificationRouter()` works as written.
@MainActor
public protocol BuzzKitDelegate: AnyObject, Sendable {
    /// Return true when you routed `url` yourself (route 1 of 3: delegate, `onDeepLink`, system).
    func buzzKit(_ buzzKit: BuzzKit, openDeepLink url: URL) -> Bool
    /// A notification was opened: `actionIdentifier` is the tapped button's id, nil for the body.
    /// Text typed into an input button is not passed here; it goes to `$notification.opened`.
    func buzzKit(_ buzzKit: BuzzKit, didOpen payload: PushPayload, actionIdentifier: String?)
    /// A queued preference change was dropped: the server refused it (`forbidden`, `rejected`) or
    /// it failed `maxAttempts` times for lack of a network (`gaveUp`). It will not be sent again;
    /// `preferences.fetch()` says what the server has.
    func buzzKit(_ buzzKit: BuzzKit, didDropPreferenceChange change: PreferenceChange, error: PreferencesError)
}

extension BuzzKitDelegate {
    public func buzzKit(_ buzzKit: BuzzKit, openDeepLink url: URL) -> Bool { false }
    public func buzzKit(_ buzzKit: BuzzKit, didOpen payload: PushPayload, actionIdentifier: String?) {}
    public func buzzKit(_ buzzKit: BuzzKit, didDropPreferenceChange change: PreferenceChange, error: PreferencesError) {
    }
}

/// The closure passed to `BuzzKit.onDeepLink` (route 2 of 3).
public typealias DeepLinkHandler = @MainActor @Sendable (URL) -> Void
