import BuzzKitCrypto
import BuzzKitPostgres
import BuzzKitWebhooks
import BuzzKitWire
import Foundation

/// A subscriber's preferences as stored, with what they mean for every category.
public struct StoredPreferences: Sendable, Hashable {
    /// The subscriber's own choices (`all`: true when never chosen).
    public var preferences: SubscriberPreferences
    /// When they last changed (nil: never).
    public var updatedAt: Date?
    /// Every category of the tenant, in key order, and whether it reaches the subscriber.
    public var effective: [EffectivePreference]
}

/// Whether one category reaches a subscriber, and why.
public struct EffectivePreference: Sendable, Hashable {
    public var category: Category
    /// The subscriber gets it: critical, or `all` on and the category on (chosen or by default).
    public var enabled: Bool
    /// The subscriber chose it (else the category's default applies).
    public var chosen: Bool
}

/// One change of a subscriber's preferences, as the history keeps it.
public struct PreferenceChangeRecord: Sendable, Hashable {
    public struct Value: Sendable, Hashable {
        /// nil: it was the default (never chosen).
        public var from: Bool?
        /// nil: back to the default (the choice removed; categories only).
        public var to: Bool?
    }

    public var id: Int64
    public var at: Date
    public var source: PreferenceSource
    public var all: Value?
    public var categories: [String: Value]

    /// `{"all": {"from", "to"}?, "categories": {"<key>": {"from", "to"}}}`: the stored `changes`.
    var changesJSON: JSONValue {
        var object: [String: JSONValue] = [
            "categories": .object(categories.mapValues(\.jsonValue))
        ]
        if let all { object["all"] = all.jsonValue }
        return .object(object)
    }
}

extension PreferenceChangeRecord {
    /// `subscriber.preferences_changed`, enqueued in the change's transaction (committed with it or
    /// not at all); its id is derived from the history entry's, so it is the same event however
    /// often it is built.
    func webhookEvent(tenant: UUID, subscriber: String) -> WebhookEvent {
        let data: [String: JSONValue] = [
            "subscriberId": .string(subscriber), "changeId": .string(String(id)), "source": .string(source.rawValue),
            "all": all?.jsonValue ?? .null, "categories": .object(categories.mapValues(\.jsonValue)),
            "changedAt": .string(EventTimestamp.format(at))
        ]
        return WebhookEvent(
            tenantId: tenant, type: .subscriberPreferencesChanged,
            id: .nameBased("subscriber.preferences_changed:\(tenant.uuidString):\(id)"), occurredAt: at,
            data: .object(data))
    }
}

extension PreferenceChangeRecord.Value {
    /// `{"from", "to"}` (null: the default), as the history, the API and the webhook event carry it.
    public var jsonValue: JSONValue {
        ["from": from.map(JSONValue.bool) ?? .null, "to": to.map(JSONValue.bool) ?? .null]
    }

    init?(json: JSONValue?) {
        guard let to = json?["to"], to == .null || to.boolValue != nil else { return nil }
        self.init(from: json?["from"]?.boolValue, to: to.boolValue)
    }
}

extension Policy {
    /// A subscriber's preferences; nil when the tenant has no such subscriber.
    public func preferences(tenant: UUID, subscriber: String) async throws -> StoredPreferences? {
        let rows = try await postgres.query(
            """
            SELECT (SELECT 1 FROM subscribers WHERE tenant_id = $1::uuid AND id = $2) AS known,
                   sp.all_enabled, sp.updated_at,
                   (SELECT max(updated_at) FROM subscriber_category_preferences
                    WHERE tenant_id = $1::uuid AND subscriber_id = $2) AS categories_updated_at
            FROM (SELECT 1) one
            LEFT JOIN subscriber_preferences sp ON sp.tenant_id = $1::uuid AND sp.subscriber_id = $2
            """, [tenant, subscriber])
        guard let head = rows.first, try head.decode(Int?.self, at: 0) != nil else { return nil }
        let all = try head.decode(Bool?.self, at: 1) ?? true
        let updated = [try head.decode(Date?.self, at: 2), try head.decode(Date?.self, at: 3)].compactMap { $0 }.max()
        let categories = try await postgres.query(
            """
            SELECT c.key, c.name, c.description, c.default_enabled, c.critical, c.created_at, c.updated_at, cp.enabled
            FROM categories c
            LEFT JOIN subscriber_category_preferences cp
                   ON cp.tenant_id = c.tenant_id AND cp.subscriber_id = $2 AND cp.category_key = c.key
            WHERE c.tenant_id = $1::uuid ORDER BY c.key
            """, [tenant, subscriber])
        var chosen: [String: Bool] = [:]
        var effective: [EffectivePreference] = []
        for row in categories {
            let category = try Self.category(row)
            let choice = try row.decode(Bool?.self, at: 7)
            if let choice { chosen[category.key] = choice }
            effective.append(
                EffectivePreference(
                    category: category,
                    enabled: category.critical || (all && (choice ?? category.defaultEnabled)),
                    chosen: choice != nil))
        }
        return StoredPreferences(
            preferences: SubscriberPreferences(all: all, categories: chosen), updatedAt: updated, effective: effective)
    }

    /// Applies `change` (what it names replaced, the rest kept) and `resets` (categories whose
    /// choice is removed: they follow their default again) and records it in the history with
    /// `source`, in one transaction; a change that changes nothing records nothing. nil when the
    /// tenant has no such subscriber; 422 (`categories.<key>`) for a category that does not exist,
    /// and then nothing is written. Concurrent changes of one subscriber take turns (the
    /// subscriber's row is locked), so each history entry's `from` is what the one before left.
    /// Answers the change as recorded (nil when nothing changed) and the preferences after it.
    public func changePreferences(
        tenant: UUID, subscriber: String, _ change: PreferenceChange, resets: Set<String> = [],
        source: PreferenceSource
    ) async throws -> (record: PreferenceChangeRecord?, preferences: StoredPreferences)? {
        let record: PreferenceChangeRecord?? = try await postgres.withTransaction { tx in
            let known = try await tx.query(
                "SELECT 1 FROM subscribers WHERE tenant_id = $1::uuid AND id = $2 FOR NO KEY UPDATE",
                [tenant, subscriber])
            guard !known.isEmpty else { return .none }
            let missing = try await Self.missingCategories(
                Set(change.categories.keys).union(resets), tenant: tenant, lock: true, on: tx)
            if !missing.isEmpty {
                let issues = missing.sorted().map {
                    ValidationIssue(path: "categories.\($0)", message: "no category with the key \($0)")
                }
                throw ValidationIssue.apiError(
                    issues,
                    message:
                        "the preferences are invalid: \(issues.count) unknown \(issues.count == 1 ? "category" : "categories")"
                )
            }
            return .some(
                try await Self.apply(
                    change, resets: resets.subtracting(change.categories.keys), tenant: tenant,
                    subscriber: subscriber, source: source, on: tx))
        }
        guard case .some(let written) = record,
            let preferences = try await preferences(tenant: tenant, subscriber: subscriber)
        else { return nil }
        return (written, preferences)
    }

    /// Writes what differs and its history row; nil when nothing differs.
    private static func apply(
        _ change: PreferenceChange, resets: Set<String>, tenant: UUID, subscriber: String, source: PreferenceSource,
        on tx: PostgresConnection
    ) async throws -> PreferenceChangeRecord? {
        let keys = Set(change.categories.keys).union(resets).sorted()
        let current = try await tx.query(
            """
            SELECT NULL::text, all_enabled FROM subscriber_preferences WHERE tenant_id = $1::uuid AND subscriber_id = $2
            UNION ALL
            SELECT category_key, enabled FROM subscriber_category_preferences
            WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND category_key = ANY($3::text[])
            """, [tenant, subscriber, keys])
        var all: Bool?
        var chosen: [String: Bool] = [:]
        for row in current {
            if let key = try row.decode(String?.self, at: 0) {
                chosen[key] = try row.decode(Bool.self, at: 1)
            } else {
                all = try row.decode(Bool.self, at: 1)
            }
        }
        var allChange: PreferenceChangeRecord.Value?
        if let wanted = change.all, wanted != (all ?? true) {
            allChange = .init(from: all, to: wanted)
        }
        var categoryChanges: [String: PreferenceChangeRecord.Value] = [:]
        for key in keys {
            let wanted = change.categories[key]
            guard chosen[key] != wanted else { continue }
            categoryChanges[key] = .init(from: chosen[key], to: wanted)
        }
        guard allChange != nil || !categoryChanges.isEmpty else { return nil }
        if let allChange {
            try await tx.execute(
                """
                INSERT INTO subscriber_preferences (tenant_id, subscriber_id, all_enabled) VALUES ($1::uuid, $2, $3)
                ON CONFLICT (tenant_id, subscriber_id) DO UPDATE SET all_enabled = EXCLUDED.all_enabled, updated_at = now()
                """, [tenant, subscriber, allChange.to])
        }
        let removed = categoryChanges.filter { $0.value.to == nil }.keys.sorted()
        if !removed.isEmpty {
            try await tx.execute(
                """
                DELETE FROM subscriber_category_preferences
                WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND category_key = ANY($3::text[])
                """, [tenant, subscriber, removed])
        }
        let chosenNow = categoryChanges.compactMapValues(\.to).sorted { $0.key < $1.key }
        if !chosenNow.isEmpty {
            try await tx.execute(
                """
                INSERT INTO subscriber_category_preferences (tenant_id, subscriber_id, category_key, enabled)
                SELECT $1::uuid, $2, u.k, u.e FROM unnest($3::text[], $4::boolean[]) AS u(k, e)
                ON CONFLICT (tenant_id, subscriber_id, category_key) DO UPDATE
                SET enabled = EXCLUDED.enabled, updated_at = now()
                """, [tenant, subscriber, chosenNow.map(\.key), chosenNow.map(\.value)])
        }
        var record = PreferenceChangeRecord(
            id: 0, at: Date(), source: source, all: allChange, categories: categoryChanges)
        let row = try await tx.query(
            """
            INSERT INTO subscriber_preference_changes (tenant_id, subscriber_id, source, changes)
            VALUES ($1::uuid, $2, $3, $4::jsonb) RETURNING id, changed_at
            """, [tenant, subscriber, source.rawValue, record.changesJSON])
        guard let written = row.first else { throw APIError.internalError }
        record.id = try written.decode(Int64.self, at: 0)
        record.at = try written.decode(Date.self, at: 1)
        try await WebhookOutbox.enqueue(on: tx, [record.webhookEvent(tenant: tenant, subscriber: subscriber)])
        return record
    }

    /// The subscriber's preference changes, newest first, before `before` (keyset on the id), at
    /// most `limit`.
    public func preferenceHistory(tenant: UUID, subscriber: String, before: Int64? = nil, limit: Int) async throws
        -> [PreferenceChangeRecord]
    {
        try await postgres.query(
            """
            SELECT id, changed_at, source, changes FROM subscriber_preference_changes
            WHERE tenant_id = $1::uuid AND subscriber_id = $2 AND ($3::bigint IS NULL OR id < $3)
            ORDER BY id DESC LIMIT $4
            """, [tenant, subscriber, before, limit]
        ).map { row in
            let changes = try row.decode(JSONValue.self, at: 3)
            var categories: [String: PreferenceChangeRecord.Value] = [:]
            for (key, value) in changes["categories"]?.objectValue ?? [:] {
                if let parsed = PreferenceChangeRecord.Value(json: value) { categories[key] = parsed }
            }
            return PreferenceChangeRecord(
                id: try row.decode(Int64.self, at: 0), at: try row.decode(Date.self, at: 1),
                source: PreferenceSource(rawValue: try row.decode(String.self, at: 2)) ?? .api,
                all: PreferenceChangeRecord.Value(json: changes["all"]), categories: categories)
        }
    }
}
