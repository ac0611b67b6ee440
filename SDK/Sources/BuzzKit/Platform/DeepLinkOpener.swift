import Foundation

/// The last route of a deep link: handing the URL to the system (`UIApplication.open` on iOS).
public protocol DeepLinkOpener: Sendable {
    func open(_ url: URL) async
}

/// An opener that does nothing (platforms without a system URL handler).
public struct NoDeepLinkOpener: DeepLinkOpener {
    public init() {}
    public func open(_ url: URL) async {}
}
