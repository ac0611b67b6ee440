import BuzzKitPostgres
import Foundation

extension [UUID] {
    /// The ids as a `uuid[]` parameter.
    var arrayParameter: PostgresValue {
        var array = PostgresArrayText(capacity: 2 + count * 37)
        for id in self { array.append(id) }
        return array.value
    }
}
