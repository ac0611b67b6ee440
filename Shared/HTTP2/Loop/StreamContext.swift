import BuzzKitCore
import Glibc

/// One admitted request on the loop thread, from admission to its end: waiting for a stream, on
/// a stream of a connection, then finished. Loop-confined, like everything under Loop/.
///
/// nghttp2 holds it as an unretained stream user-data pointer; the channel's `outstanding`
/// list holds the strong reference until the request ends, and the pointer is cleared from the
/// stream before that (see `Channel.finish`), so a late nghttp2 callback finds nothing.
final class StreamContext {
    let request: HTTP2Request
    let sink: BatchSink
    let index: Int
    let deadline: ContinuousClock.Instant

    /// Set while the request is on a stream.
    var connection: Connection?
    var streamID: Int32 = 0
    /// Its HEADERS frame was written: from then on the server may have acted on it.
    var headersSent = false
    var bodyOffset = 0
    var status = 0
    var headers = HTTPHeaders()
    var body: [UInt8] = []
    var openedConnection = false
    /// Times it went back to the queue unprocessed (GOAWAY, refused, never written).
    var resends = 0
    var finished = false

    /// The channel's list of unfinished requests in admission order (deadline order).
    var next: StreamContext?
    unowned(unsafe) var previous: StreamContext?

    init(request: HTTP2Request, sink: BatchSink, index: Int, deadline: ContinuousClock.Instant) {
        self.request = request
        self.sink = sink
        self.index = index
        self.deadline = deadline
    }

    /// A response field's value as text: the request's own string when the request sent the same
    /// field with the same value as its `uniqueField` or among its `uniqueHeaders` (APNs echoes
    /// each push's `apns-id`), so no string is made for it per response and comparing the two
    /// later is an identity check.
    func responseValue(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> String {
        if let field = request.uniqueField, Self.equal(field.name, name), Self.equal(field.value, value) {
            return field.value
        }
        for field in request.uniqueHeaders.fields where Self.equal(field.name, name) {
            if Self.equal(field.value, value) { return field.value }
        }
        return String(decoding: value, as: UTF8.self)
    }

    /// Whether `text`'s UTF-8 bytes are `bytes` (one memcmp; a generic byte-by-byte comparison
    /// of the two cost more than the string it saves).
    private static func equal(_ text: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == bytes.count else { return false }
        return utf8.withContiguousStorageIfAvailable { stored in
            stored.count == 0 || memcmp(stored.baseAddress!, bytes.baseAddress!, stored.count) == 0
        } ?? utf8.elementsEqual(bytes)
    }

    /// Back to how it was admitted, for another stream.
    func resetForResend() {
        connection = nil
        streamID = 0
        headersSent = false
        bodyOffset = 0
        status = 0
        headers = HTTPHeaders()
        body.removeAll()
        openedConnection = false
    }
}

/// The answers of one submitted batch; resumes the caller when the last request ended.
final class BatchSink {
    private var results: [HTTP2Result?]
    private var remaining: Int
    private let reply: CheckedContinuation<[HTTP2Result], Never>

    init(count: Int, reply: CheckedContinuation<[HTTP2Result], Never>) {
        results = Array(repeating: nil, count: count)
        remaining = count
        self.reply = reply
    }

    func complete(_ index: Int, _ result: HTTP2Result) {
        results[index] = result
        remaining -= 1
        guard remaining == 0 else { return }
        // Moved out of their slots, not copied (every slot is filled by now).
        let count = results.count
        let finished = [HTTP2Result](unsafeUninitializedCapacity: count) { out, initialized in
            for slot in 0..<count { (out.baseAddress! + slot).initialize(to: results[slot].take()!) }
            initialized = count
        }
        reply.resume(returning: finished)
    }
}

/// Unfinished requests in admission order, so the oldest (the next to time out) is the head.
/// Intrusive: O(1) append and unlink, no allocation.
struct OutstandingList {
    private(set) var head: StreamContext?
    private unowned(unsafe) var tail: StreamContext?
    private(set) var count = 0

    mutating func append(_ context: StreamContext) {
        context.previous = tail
        context.next = nil
        if let tail { tail.next = context } else { head = context }
        tail = context
        count += 1
    }

    mutating func remove(_ context: StreamContext) {
        let next = context.next
        if let previous = context.previous { previous.next = next } else { head = next }
        if let next { next.previous = context.previous } else { tail = context.previous }
        context.next = nil
        context.previous = nil
        count -= 1
    }

    /// Every unfinished request, oldest first (a snapshot: safe to finish them while iterating).
    var all: [StreamContext] {
        var list: [StreamContext] = []
        list.reserveCapacity(count)
        var node = head
        while let current = node {
            list.append(current)
            node = current.next
        }
        return list
    }
}

/// A first-in first-out queue with cheap removal at the front and insertion at both ends.
struct Ring<Element> {
    private var storage: [Element?] = Array(repeating: nil, count: 16)
    private var start = 0
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }
    var first: Element? { count == 0 ? nil : storage[start] }

    mutating func append(_ element: Element) {
        grow()
        storage[(start + count) & (storage.count - 1)] = element
        count += 1
    }

    mutating func prepend(_ element: Element) {
        grow()
        start = (start - 1) & (storage.count - 1)
        storage[start] = element
        count += 1
    }

    @discardableResult
    mutating func removeFirst() -> Element {
        let element = storage[start]!
        storage[start] = nil
        start = (start + 1) & (storage.count - 1)
        count -= 1
        return element
    }

    mutating func removeAll() {
        storage = Array(repeating: nil, count: 16)
        start = 0
        count = 0
    }

    private mutating func grow() {
        guard count == storage.count else { return }
        var bigger = [Element?](repeating: nil, count: storage.count * 2)
        for offset in 0..<count { bigger[offset] = storage[(start + offset) & (storage.count - 1)] }
        storage = bigger
        start = 0
    }
}
