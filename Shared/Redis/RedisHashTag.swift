/// Keys that one command or script uses together must hash to one Redis Cluster slot, or a
/// Cluster answers `CROSSSLOT`. A hash tag does that: when a key holds `{...}` with something
/// inside, only that part is hashed (`{bk:events}:dead` lands where `bk:events` does).
///
/// BuzzKit names the keys that belong to a stream (its dead-letter stream, a group's errors hash)
/// with `sibling(of:_:)`, so the consumer's dead-letter script (XADD + XACK + HDEL) runs on one
/// slot, while the streams keep their plain names and spread over the Cluster's nodes.
public enum RedisHashTag {
    /// The part of `key` that Redis hashes: the text inside the first `{...}` when it is not
    /// empty, else the whole key (the rule of the Redis Cluster specification).
    public static func hashedPart(of key: String) -> Substring {
        guard let open = key.firstIndex(of: "{") else { return key[...] }
        let afterOpen = key.index(after: open)
        guard let close = key[afterOpen...].firstIndex(of: "}"), close > afterOpen else { return key[...] }
        return key[afterOpen..<close]
    }

    /// A key in the same slot as `key`: `{key}:suffix`, or `key:suffix` when `key` already
    /// carries a hash tag (wrapping it again would hash something else). A key with a `}` and no
    /// tag cannot be wrapped (the `}` would end the tag early): it gets `key:suffix`, in a slot of
    /// its own, so give such keys a tag of their own.
    public static func sibling(of key: String, _ suffix: String) -> String {
        let untagged = hashedPart(of: key).count == key.count
        return untagged && !key.contains("}") ? "{\(key)}:\(suffix)" : "\(key):\(suffix)"
    }
}
