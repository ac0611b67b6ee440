/// The binary list of events inside `bk:ingest` and `bk:events` entries, so no consumer parses
/// JSON to read them: per event, big-endian `u32 len, id bytes, u32 len, name bytes,
/// i64 timestamp µs, u32 len, data as compact JSON`.
enum EventBlob {
    static func encode(_ events: some Collection<IngestEntry.Event>) -> [UInt8] {
        var blob: [UInt8] = []
        blob.reserveCapacity(events.reduce(0) { $0 + 20 + $1.id.utf8.count + $1.name.utf8.count + $1.dataJSON.count })
        for event in events {
            appendChunk(event.id.utf8, to: &blob)
            appendChunk(event.name.utf8, to: &blob)
            withUnsafeBytes(of: event.timestampMicroseconds.bigEndian) { blob.append(contentsOf: $0) }
            appendChunk(event.dataJSON, to: &blob)
        }
        return blob
    }

    static func decode(_ blob: [UInt8]) throws(IngestEntryError) -> [IngestEntry.Event] {
        var events: [IngestEntry.Event] = []
        var reader = Reader(bytes: blob)
        while !reader.atEnd {
            guard let id = reader.chunk(), let name = reader.chunk(), let micros = reader.int64(),
                let data = reader.chunk()
            else {
                throw IngestEntryError("truncated events")
            }
            events.append(
                IngestEntry.Event(
                    id: String(decoding: id, as: UTF8.self), name: String(decoding: name, as: UTF8.self),
                    timestampMicroseconds: micros, dataJSON: data))
        }
        return events
    }

    private static func appendChunk(_ bytes: some Collection<UInt8>, to blob: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(bytes.count).bigEndian) { blob.append(contentsOf: $0) }
        blob.append(contentsOf: bytes)
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var atEnd: Bool { offset >= bytes.count }

        mutating func uint32() -> UInt32? {
            guard offset + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for k in 0..<4 { value = value << 8 | UInt32(bytes[offset + k]) }
            offset += 4
            return value
        }

        mutating func int64() -> Int64? {
            guard offset + 8 <= bytes.count else { return nil }
            var value: UInt64 = 0
            for k in 0..<8 { value = value << 8 | UInt64(bytes[offset + k]) }
            offset += 8
            return Int64(bitPattern: value)
        }

        mutating func chunk() -> [UInt8]? {
            guard let length = uint32().map(Int.init), offset + length <= bytes.count else { return nil }
            defer { offset += length }
            return Array(bytes[offset..<offset + length])
        }
    }
}
