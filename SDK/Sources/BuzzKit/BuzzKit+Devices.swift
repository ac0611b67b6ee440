import BuzzKitWire
import Foundation

/// The notification permission as the API records it.
public enum NotificationPermission: String, Sendable, Hashable {
    case unknown, authorized, denied, provisional, ephemeral
}

extension BuzzKit {
    /// Registers the APNs device token (`PUT /v1/subscribers/{id}/devices/{token}`) under the
    /// current identity, with the environment, bundle id, app version, locale and timezone.
    /// Kept and retried on every flush until the API answers; sent again after `identify`.
    public func registerDeviceToken(_ token: [UInt8], permission: NotificationPermission? = nil) async {
        let hex = Hex.string(token)
        var values: [String: String?] = [StateKey.deviceToken: hex, StateKey.deviceRegistrationPending: "1"]
        if let permission { values[StateKey.devicePermission] = permission.rawValue }
        await jobs.run { [self, values] in
            do { try await store.setValues(values) } catch {
                logger.error("cannot store the device token", ["error": String(describing: error)])
            }
        }
        _ = await flushes.run { [self] in await sendPendingDeviceRegistration() }
    }

    /// Records a change of the notification permission: `$permission.changed {status}` and a
    /// device registration carrying it. The SDK calls it when the platform's permission reading
    /// changed (at launch and on every foreground); apps need not.
    public func permissionChanged(_ permission: NotificationPermission) {
        emit(ReservedEvent.permissionChanged, ["status": .string(permission.rawValue)])
        jobs.submit { [self] in
            try? await store.setValues([
                StateKey.devicePermission: permission.rawValue,
                StateKey.observedPermission: permission.rawValue,
                StateKey.deviceRegistrationPending: "1"
            ])
        }
    }

    @discardableResult
    /// Reads the platform's permission and reports a change since the last reading as
    /// `$permission.changed` (the first reading is only recorded). Runs at `start()` and on every
    /// foreground, in order with the other writes.
    func checkPermission() async {
        await jobs.run { [self] in
            guard let current = await platform.permissions.currentPermission() else { return }
            let previous = try? await store.value(StateKey.observedPermission)
            guard previous != current.rawValue else { return }
            do {
                try await store.setValues([
                    StateKey.observedPermission: current.rawValue,
                    StateKey.devicePermission: current.rawValue
                ])
            } catch {
                logger.error("cannot store the notification permission", ["error": String(describing: error)])
            }
            if previous != nil { permissionChanged(current) }
        }
    }

    func sendPendingDeviceRegistration() async -> FlushPassResult {
        guard (try? await store.value(StateKey.deviceRegistrationPending)) != nil,
            let token = try? await store.value(StateKey.deviceToken)
        else { return .finished }
        let permission = try? await store.value(StateKey.devicePermission)
        var body: [String: JSONValue] = [
            "environment": .string((configuration.pushEnvironment ?? .detected).rawValue),
            "appVersion": .string(configuration.appVersion),
            "locale": .string(Locale.current.identifier.replacingOccurrences(of: "_", with: "-")),
            "timezone": .string(TimeZone.current.identifier)
        ]
        if let bundle = configuration.bundleId { body["bundleId"] = .string(bundle) }
        if let permission { body["permission"] = .string(permission) }
        switch await api.registerDevice(subscriber: identity.value, token: token, body: .object(body), as: anonymousId)
        {
        case .accepted:
            try? await store.setValue(nil, for: StateKey.deviceRegistrationPending)
        case .rejected(let status, let error):
            logger.error(
                "device registration rejected by the API",
                [
                    "status": String(status), "error.code": error?.code.rawValue ?? "",
                    "error.message": error?.message ?? ""
                ])
            try? await store.setValue(nil, for: StateKey.deviceRegistrationPending)
        case .retryLater(let reason):
            logger.warning("device registration not sent; retried on the next flush", ["reason": reason])
            return .networkFailure
        }
        return .finished
    }
}
