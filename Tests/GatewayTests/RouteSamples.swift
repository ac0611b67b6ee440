import BuzzKitWire
import GatewayApp

/// A concrete request for each route of the table: parameters filled in and a valid body, so
/// table-driven tests can call every route.
enum RouteSamples {
    struct Values {
        var subscriber = "sub-1"
        var token = deviceToken("token-1")
        var topic = "topic-1"
        var tenant = "00000000-0000-0000-0000-000000000000"
        var apiKey = "00000000-0000-0000-0000-000000000000"
    }

    static func path(_ route: GatewayRoute, _ values: Values) -> String {
        var path = route.path
        let tenantLike = route.path.hasPrefix("/v1/tenants") ? values.tenant : values.apiKey
        path = path.replacingOccurrences(of: "{token}", with: values.token)
        path = path.replacingOccurrences(of: "{key}", with: values.topic)
        path = path.replacingOccurrences(of: "{n}", with: "1")
        path = path.replacingOccurrences(of: "{activityId}", with: "activity-1")
        path = path.replacingOccurrences(of: "{attributesType}", with: "MatchAttributes")
        if route.path.hasPrefix("/v1/subscribers") || route.path.hasPrefix("/v1/topics") {
            path = path.replacingOccurrences(of: "{id}", with: values.subscriber)
        } else {
            path = path.replacingOccurrences(of: "{id}", with: tenantLike)
        }
        return path
    }

    static func body(_ route: GatewayRoute, _ values: Values) -> JSONValue? {
        switch route.operationID {
        case "createTenant": ["name": "t"]
        case "updateTenant": ["name": "renamed"]
        case "createAPIKey": ["name": "k", "scopes": ["subscribers:read"]]
        case "upsertSubscriber": ["attributes": ["plan": "a"], "timezone": "Europe/Berlin"]
        case "registerDevice": ["environment": "sandbox", "bundleId": "com.example.a"]
        case "registerLiveActivity":
            [
                "attributesType": "MatchAttributes", "token": .string(values.token), "environment": "sandbox",
                "bundleId": "com.example.a"
            ]
        case "registerLiveActivityStartToken": ["token": .string(values.token), "environment": "sandbox"]
        case "identify": ["anonymousId": .string(values.subscriber), "subscriberId": "someone-else"]
        case "createInstallation": ["anonymousId": .string(values.subscriber)]
        case "upsertTopic": ["name": "renamed"]
        case "addTopicSubscribers": ["ids": [.string(values.subscriber), "other"]]
        case "saveWorkflow":
            [
                "trigger": ["event": "signed.up"],
                "steps": [["name": "hello", "send": ["title": "Hi {{ subscriber.id }}"]]]
            ]
        case "dryRunWorkflow": ["subscriber": .string(values.subscriber), "event": ["data": [:]]]
        case "updateSettings": ["quietHours": ["start": "22:00", "end": "08:00"]]
        default: nil
        }
    }
}
