/// A token of the expression language, with its 1-based position.
struct AudienceToken: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case identifier(String)
        /// A `` `quoted` `` path segment: always an attribute key, never a keyword or field.
        case quotedIdentifier(String)
        case string(String)
        case number(String)
        case comparison(AudienceComparison)
        case leftParen, rightParen, leftBracket, rightBracket, comma, colon, dot
        case end
    }

    var kind: Kind
    var line: Int
    var column: Int

    /// How the token reads in "found ..." messages.
    var display: String {
        switch kind {
        case .identifier(let name): "'\(name)'"
        case .quotedIdentifier(let name): "`\(name)`"
        case .string(let value): "string \"\(value.count > 40 ? String(value.prefix(40)) + "..." : value)\""
        case .number(let text): "number \(text)"
        case .comparison(let op): "'\(op.rawValue)'"
        case .leftParen: "'('"
        case .rightParen: "')'"
        case .leftBracket: "'['"
        case .rightBracket: "']'"
        case .comma: "','"
        case .colon: "':'"
        case .dot: "'.'"
        case .end: "end of input"
        }
    }
}

/// Splits expression text into tokens. Strings are double-quoted with JSON escapes (`\" \\ \/ \b
/// \f \n \r \t \uXXXX`); identifiers are `[A-Za-z_][A-Za-z0-9_]*`; numbers follow JSON's grammar
/// (a leading `-` is part of the number).
struct AudienceLexer {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var line = 1
    private var column = 1

    init(_ text: String) {
        scalars = Array(text.unicodeScalars)
    }

    static func tokenize(_ text: String) throws(AudienceError) -> [AudienceToken] {
        var lexer = AudienceLexer(text)
        var tokens: [AudienceToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }
    private func peek(_ offset: Int) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }

    private mutating func advance() {
        if scalars[index] == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
        index += 1
    }

    private func error(_ message: String, expected: String? = nil, line: Int? = nil, column: Int? = nil)
        -> AudienceError
    {
        AudienceError(.syntaxError, message, line: line ?? self.line, column: column ?? self.column, expected: expected)
    }

    mutating func next() throws(AudienceError) -> AudienceToken {
        while let c = current, c == " " || c == "\t" || c == "\n" || c == "\r" { advance() }
        let startLine = line
        let startColumn = column
        func token(_ kind: AudienceToken.Kind) -> AudienceToken {
            AudienceToken(kind: kind, line: startLine, column: startColumn)
        }
        guard let c = current else { return token(.end) }
        switch c {
        case "(":
            advance()
            return token(.leftParen)
        case ")":
            advance()
            return token(.rightParen)
        case "[":
            advance()
            return token(.leftBracket)
        case "]":
            advance()
            return token(.rightBracket)
        case ",":
            advance()
            return token(.comma)
        case ":":
            advance()
            return token(.colon)
        case ".":
            advance()
            return token(.dot)
        case "=":
            advance()
            guard current == "=" else {
                throw error("'=' is not an operator; use '=='", expected: "'=='", line: startLine, column: startColumn)
            }
            advance()
            return token(.comparison(.equal))
        case "!":
            advance()
            guard current == "=" else {
                throw error(
                    "'!' is not an operator; use 'not' or '!='", expected: "'!='", line: startLine, column: startColumn)
            }
            advance()
            return token(.comparison(.notEqual))
        case "<", ">":
            advance()
            if current == "=" {
                advance()
                return token(.comparison(c == "<" ? .lessOrEqual : .greaterOrEqual))
            }
            return token(.comparison(c == "<" ? .less : .greater))
        case "\"":
            return token(.string(try string()))
        case "`":
            advance()
            var name = ""
            while let s = current, s != "`" {
                guard s != "\n" else { break }
                name.unicodeScalars.append(s)
                advance()
            }
            guard current == "`" else { throw error("unterminated quoted name", expected: "'`'") }
            advance()
            return token(.quotedIdentifier(name))
        default:
            if c == "-" || isDigit(c) { return token(.number(try number())) }
            if isIdentifierStart(c) {
                var name = ""
                while let s = current, isIdentifierStart(s) || isDigit(s) {
                    name.unicodeScalars.append(s)
                    advance()
                }
                return token(.identifier(name))
            }
            throw error(
                "unexpected character '\(c.escaped(asASCII: true))'", expected: "a condition, value or operator")
        }
    }

    private func isDigit(_ c: Unicode.Scalar) -> Bool { c >= "0" && c <= "9" }
    private func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "_"
    }

    private mutating func string() throws(AudienceError) -> String {
        let startLine = line
        let startColumn = column
        advance()  // opening quote
        var value = ""
        while true {
            guard let c = current, c != "\n" else {
                throw error("unterminated string", expected: "'\"'", line: startLine, column: startColumn)
            }
            advance()
            if c == "\"" { return value }
            if c.value < 0x20 { throw error("control character in string", expected: "'\"'") }
            guard c == "\\" else {
                value.unicodeScalars.append(c)
                continue
            }
            guard let e = current else {
                throw error("unterminated string", expected: "'\"'", line: startLine, column: startColumn)
            }
            let escapeLine = line
            let escapeColumn = column - 1
            advance()
            switch e {
            case "\"": value += "\""
            case "\\": value += "\\"
            case "/": value += "/"
            case "b": value += "\u{08}"
            case "f": value += "\u{0C}"
            case "n": value += "\n"
            case "r": value += "\r"
            case "t": value += "\t"
            case "u":
                var code: UInt32 = 0
                for _ in 0..<4 {
                    guard let h = current, let digit = hexValue(h) else {
                        throw error(
                            "invalid \\u escape", expected: "4 hexadecimal digits", line: escapeLine,
                            column: escapeColumn)
                    }
                    code = code * 16 + digit
                    advance()
                }
                guard code != 0, let scalar = Unicode.Scalar(code) else {
                    throw error(
                        "\\u escape is not a usable character", expected: "a Unicode scalar other than NUL",
                        line: escapeLine, column: escapeColumn)
                }
                value.unicodeScalars.append(scalar)
            default:
                throw error(
                    "invalid escape '\\\(e)'", expected: "one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX",
                    line: escapeLine, column: escapeColumn)
            }
        }
    }

    private func hexValue(_ c: Unicode.Scalar) -> UInt32? {
        switch c {
        case "0"..."9": c.value - 48
        case "a"..."f": c.value - 97 + 10
        case "A"..."F": c.value - 65 + 10
        default: nil
        }
    }

    private mutating func number() throws(AudienceError) -> String {
        let startLine = line
        let startColumn = column
        var text = ""
        func bad() -> AudienceError {
            AudienceError(
                .syntaxError, "malformed number", line: startLine, column: startColumn,
                expected: "a number such as 3, -1.5 or 2e3")
        }
        if current == "-" {
            text += "-"
            advance()
        }
        guard let first = current, isDigit(first) else { throw bad() }
        while let d = current, isDigit(d) {
            text.unicodeScalars.append(d)
            advance()
        }
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        if digits.count > 1 && digits.hasPrefix("0") { throw bad() }
        if current == ".", let d = peek(1), isDigit(d) {
            text += "."
            advance()
            while let d = current, isDigit(d) {
                text.unicodeScalars.append(d)
                advance()
            }
        }
        if current == "e" || current == "E" {
            text += "e"
            advance()
            if let sign = current, sign == "+" || sign == "-" {
                text.unicodeScalars.append(sign)
                advance()
            }
            guard let d = current, isDigit(d) else { throw bad() }
            while let d = current, isDigit(d) {
                text.unicodeScalars.append(d)
                advance()
            }
        }
        if let c = current, isIdentifierStart(c) { throw bad() }
        return text
    }
}
