#if canImport(UIKit) && !os(watchOS)
    import UIKit

    /// The last deep-link route: `UIApplication.open`.
    public struct UIApplicationOpener: DeepLinkOpener {
        public init() {}

        public func open(_ url: URL) async {
            await MainActor.run {
                UIApplication.shared.open(url, options: [:], completionHandler: nil)
            }
        }
    }
#endif
