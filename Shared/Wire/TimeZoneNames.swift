import Foundation

/// The IANA time zone names BuzzKit accepts wherever a zone is named (a subscriber's `timezone`, a
/// tenant's default, a workflow's `waitUntil` or quiet hours): every zone file under
/// /usr/share/zoneinfo (`Europe/Berlin`, `UTC`, `Etc/UTC`, `Asia/Kolkata`), plus Foundation's
/// `knownTimeZoneIdentifiers`, each one `TimeZone(identifier:)` loads. Foundation's list alone has
/// only 443 names, without UTC or Asia/Kolkata: one list for every check keeps a zone the gateway
/// saved on a subscriber from being refused in a workflow. Read once.
public enum TimeZoneNames {
    public static let all: [String] = {
        var names = Set(TimeZone.knownTimeZoneIdentifiers)
        let root = "/usr/share/zoneinfo/"
        if let walker = FileManager.default.enumerator(atPath: root) {
            while let path = walker.nextObject() as? String {
                if path.hasPrefix("posix") || path.hasPrefix("right") {
                    walker.skipDescendants()
                    continue
                }
                guard let handle = FileHandle(forReadingAtPath: root + path) else { continue }
                let magic = (try? handle.read(upToCount: 4)) ?? nil
                try? handle.close()
                if magic == Data("TZif".utf8) { names.insert(path) }
            }
        }
        return names.filter { TimeZone(identifier: $0) != nil }.sorted()
    }()

    private static let set = Set(all)

    public static func isKnown(_ name: String) -> Bool { set.contains(name) }
}
