#if canImport(UIKit) && os(iOS)
    import BuzzKitWire
    import Foundation
    import ObjectiveC
    import UIKit

    /// With `automaticPushHandling`, puts BuzzKit in front of two methods of the app delegate's
    /// class: `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)` (silent pushes;
    /// Swift's `async` variant is the same method) and
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`.
    ///
    /// The method is added to the delegate's class when the app does not implement it, else its
    /// implementation is replaced by one that calls BuzzKit and then the app's own with the same
    /// arguments. The fetch completion handler is called exactly once, when both are done, with
    /// `.newData` when either had new data.
    @MainActor
    enum AppDelegateForwarding {
        typealias Handler = NotificationCenterForwarder.Handler
        typealias FetchCompletion = @convention(block) (UIBackgroundFetchResult) -> Void
        private typealias FetchIMP =
            @convention(c) (AnyObject, Selector, UIApplication, NSDictionary, @escaping FetchCompletion) -> Void
        private typealias TokenIMP = @convention(c) (AnyObject, Selector, UIApplication, NSData) -> Void

        private static var forwarded: Set<ObjectIdentifier> = []

        static func install(_ handler: @escaping Handler, retries: Int = 1) {
            guard let delegate = UIApplication.shared.delegate else {
                // configure ran before UIKit set the delegate (e.g. in a SwiftUI App's init): try once more.
                if retries > 0 { Task { @MainActor in install(handler, retries: retries - 1) } }
                return
            }
            let cls: AnyClass = type(of: delegate)
            guard forwarded.insert(ObjectIdentifier(cls)).inserted else { return }
            forwardRemoteNotifications(of: cls, to: handler)
            forwardDeviceToken(of: cls, to: handler)
        }

        private static func forwardRemoteNotifications(of cls: AnyClass, to handler: @escaping Handler) {
            let selector = NSSelectorFromString("application:didReceiveRemoteNotification:fetchCompletionHandler:")
            let original = class_getInstanceMethod(cls, selector).map {
                unsafeBitCast(method_getImplementation($0), to: FetchIMP.self)
            }
            let block: @convention(block) (AnyObject, UIApplication, NSDictionary, @escaping FetchCompletion) -> Void =
                {
                    this, application, userInfo, completion in
                    let payload = (userInfo as? [AnyHashable: Any]).flatMap { try? PushPayload.parse(userInfo: $0) }
                    let join = FetchJoin(
                        parts: (payload == nil ? 0 : 1) + (original == nil ? 0 : 1), completion: completion)
                    if let payload {
                        Task { join.finish(await handler(.received(payload)) == .newData ? .newData : .noData) }
                    }
                    if let original { original(this, selector, application, userInfo, { join.finish($0) }) }
                }
            replace(selector, in: cls, with: imp_implementationWithBlock(block), types: "v@:@@@?")
        }

        private static func forwardDeviceToken(of cls: AnyClass, to handler: @escaping Handler) {
            let selector = NSSelectorFromString("application:didRegisterForRemoteNotificationsWithDeviceToken:")
            let original = class_getInstanceMethod(cls, selector).map {
                unsafeBitCast(method_getImplementation($0), to: TokenIMP.self)
            }
            let block: @convention(block) (AnyObject, UIApplication, NSData) -> Void = { this, application, token in
                let bytes = [UInt8](token as Data)
                Task { _ = await handler(.deviceToken(bytes)) }
                original?(this, selector, application, token)
            }
            replace(selector, in: cls, with: imp_implementationWithBlock(block), types: "v@:@@")
        }

        /// Adds the method to `cls` itself (so an inherited one is overridden, not changed for the
        /// superclass); when `cls` has its own, swaps its implementation.
        private static func replace(_ selector: Selector, in cls: AnyClass, with imp: IMP, types: String) {
            if !class_addMethod(cls, selector, imp, types), let method = class_getInstanceMethod(cls, selector) {
                method_setImplementation(method, imp)
            }
        }
    }

    /// Calls a fetch completion handler once, after `parts` results (immediately with `.noData` for
    /// zero parts), with `.newData` when any part had new data.
    /// `@unchecked Sendable`: the mutable state is only touched under `lock`.
    private final class FetchJoin: @unchecked Sendable {
        private let lock = NSLock()
        private var remaining: Int
        private var result = UIBackgroundFetchResult.noData
        private let completion: AppDelegateForwarding.FetchCompletion

        init(parts: Int, completion: @escaping AppDelegateForwarding.FetchCompletion) {
            remaining = parts
            self.completion = completion
            if parts == 0 { completion(.noData) }
        }

        func finish(_ part: UIBackgroundFetchResult) {
            let done: UIBackgroundFetchResult? = lock.withLock {
                guard remaining > 0 else { return nil }
                remaining -= 1
                if part == .newData || (part == .failed && result != .newData) { result = part }
                return remaining == 0 ? result : nil
            }
            guard let done else { return }
            let completion = UncheckedBox(self.completion)  // UIKit's block; called once, on the main queue
            DispatchQueue.main.async { completion.value(done) }
        }
    }
#endif
