#if canImport(os)
    import os

    /// Sends SDK log lines to the unified log under subsystem `dev.buzzkit.sdk`.
    enum OSLogHandler {
        static let logger = os.Logger(subsystem: "dev.buzzkit.sdk", category: "BuzzKit")

        static let handler: LogHandler = { entry in
            let meta = entry.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            let text = meta.isEmpty ? entry.message : entry.message + " " + meta
            switch entry.level {
            case .debug: logger.debug("\(text, privacy: .public)")
            case .info: logger.info("\(text, privacy: .public)")
            case .warning: logger.warning("\(text, privacy: .public)")
            case .error: logger.error("\(text, privacy: .public)")
            }
        }
    }
#endif
