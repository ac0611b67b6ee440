import BuzzKitWire
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The HTTP client of these tests, kept behind one function so it can be swapped for
// BuzzKitHTTPClient later. URLSession is a real HTTP/1.1 client; response header names are
// lowercased in the returned dictionary.

struct TestClientError: Error, CustomStringConvertible {
    var description: String
}

func send(
    _ method: String, _ url: String, headers: [String: String] = [:],
    body: [UInt8]? = nil
) async throws -> (status: Int, headers: [String: String], body: [UInt8]) {
    guard let target = URL(string: url) else { throw TestClientError(description: "bad URL \(url)") }
    var request = URLRequest(url: target)
    request.httpMethod = method
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    if let body { request.httpBody = Data(body) }
    let (data, response) = try await URLSession.shared.data(for: request)
    guard let http = response as? HTTPURLResponse else { throw TestClientError(description: "not an HTTP response") }
    var responseHeaders: [String: String] = [:]
    for (name, value) in http.allHeaderFields {
        responseHeaders[String(describing: name).lowercased()] = String(describing: value)
    }
    return (http.statusCode, responseHeaders, Array(data))
}

/// Runs the `curl` command-line tool (keep-alive and raw-body cases) off the cooperative pool.
func curl(_ arguments: [String]) async throws -> (exitCode: Int32, output: String) {
    try await withCheckedThrowingContinuation { continuation in
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        process.terminationHandler = { process in
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            continuation.resume(returning: (process.terminationStatus, String(decoding: data, as: UTF8.self)))
        }
        do {
            try process.run()
        } catch {
            continuation.resume(throwing: error)
        }
    }
}

/// GETs every URL at once; each answer's status and envelope `data`, in the order of `urls`.
func getConcurrently(_ urls: [String]) async throws -> [(status: Int, data: JSONValue?)] {
    try await withThrowingTaskGroup(of: (Int, Int, JSONValue?).self) { group in
        for (index, url) in urls.enumerated() {
            group.addTask {
                let (status, _, body) = try await send("GET", url)
                return (index, status, try Envelope.from(body).data)
            }
        }
        var answers = [(status: Int, data: JSONValue?)](repeating: (0, nil), count: urls.count)
        for try await (index, status, data) in group { answers[index] = (status, data) }
        return answers
    }
}
