import BuzzKitWire

extension AudienceExpression {
    /// Parses and type-checks `text`. Throws `AudienceError` with the line and column of the first
    /// problem and what was expected there.
    ///
    /// Grammar (keywords are case-sensitive):
    /// ```
    /// expr       := and ("or" and)*
    /// and        := unary ("and" unary)*
    /// unary      := "not" unary | primary
    /// primary    := "(" expr ")" | call | operand tail
    /// tail       := ("==" | "!=" | "<" | "<=" | ">" | ">=") literal | "in" "[" literal ("," literal)* "]"
    ///             | "startsWith" string
    /// operand    := segment ("." segment)*         segment := identifier | `quoted name`
    /// call       := "exists" "(" operand ")" | "in_topic" "(" string ")"
    ///             | "has_device" "(" ["environment" ":" string] ")"
    ///             | "did" "(" string ["," "within" ":" string] ["," "where" ":" expr] ")"
    ///             | "count" "(" ...same as did... ")" comparison integer
    /// literal    := string | number | "true" | "false"
    /// ```
    /// In the subscriber context the one-segment names `timezone`, `locale` and `createdAt` are the
    /// subscriber's fields (an attribute of that name is written `` `timezone` ``); every other path
    /// is an attribute. Inside `where:` (and in the event context) paths are keys of the event's data.
    /// In the document context a path starts with one of the context's roots and the right side of
    /// a comparison may be another path (`tail := op (literal | operand)`).
    public static func parse(
        _ text: String, context: AudienceContext = .subscriber,
        limits: AudienceLimits = .default
    ) throws(AudienceError) -> AudienceExpression {
        let scalars = Array(text.unicodeScalars)
        if scalars.count > limits.maxLength {
            var line = 1
            var column = 1
            for scalar in scalars.prefix(limits.maxLength) {
                if scalar == "\n" {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
            }
            throw AudienceError(
                .limitExceeded, "expression longer than \(limits.maxLength) characters", line: line, column: column)
        }
        var parser = AudienceParser(tokens: try AudienceLexer.tokenize(text), context: context, limits: limits)
        return try parser.parseAll()
    }
}

/// Recursive descent over the token list; counts depth, conditions and event clauses as it goes.
struct AudienceParser {
    private let tokens: [AudienceToken]
    private var position = 0
    private var context: AudienceContext
    private let limits: AudienceLimits
    private var depth = 0
    private var conditions = 0
    private var eventClauses = 0

    static let keywords: Set<String> = ["and", "or", "not", "in", "startsWith", "true", "false"]
    static let functions = ["exists", "in_topic", "has_device", "did", "count"]

    init(tokens: [AudienceToken], context: AudienceContext, limits: AudienceLimits) {
        self.tokens = tokens
        self.context = context
        self.limits = limits
    }

    private var current: AudienceToken { tokens[position] }
    private var nextToken: AudienceToken { tokens[min(position + 1, tokens.count - 1)] }
    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    private func isKeyword(_ word: String) -> Bool {
        if case .identifier(let name) = current.kind { return name == word }
        return false
    }

    private func syntax(_ expected: String, at token: AudienceToken? = nil) -> AudienceError {
        let token = token ?? current
        return AudienceError(
            .syntaxError, "expected \(expected) but found \(token.display)",
            line: token.line, column: token.column, expected: expected)
    }

    private func invalid(_ message: String, at token: AudienceToken) -> AudienceError {
        AudienceError(.invalidValue, message, line: token.line, column: token.column)
    }

    private func limit(_ message: String, at token: AudienceToken) -> AudienceError {
        AudienceError(.limitExceeded, message, line: token.line, column: token.column)
    }

    private mutating func expect(_ kind: AudienceToken.Kind, _ description: String) throws(AudienceError) {
        guard current.kind == kind else { throw syntax(description) }
        advance()
    }

    private mutating func enter(_ token: AudienceToken) throws(AudienceError) {
        depth += 1
        if depth > limits.maxDepth { throw limit("expression nested deeper than \(limits.maxDepth) levels", at: token) }
    }

    private mutating func countCondition(_ token: AudienceToken) throws(AudienceError) {
        conditions += 1
        if conditions > limits.maxConditions { throw limit("more than \(limits.maxConditions) conditions", at: token) }
    }

    mutating func parseAll() throws(AudienceError) -> AudienceExpression {
        if current.kind == .end { throw syntax("a condition") }
        let expression = try parseOr()
        guard current.kind == .end else { throw syntax("'and', 'or' or end of input") }
        return expression
    }

    private mutating func parseOr() throws(AudienceError) -> AudienceExpression {
        var items = [try parseAnd()]
        while isKeyword("or") {
            advance()
            items.append(try parseAnd())
        }
        return items.count == 1 ? items[0] : .or(items)
    }

    private mutating func parseAnd() throws(AudienceError) -> AudienceExpression {
        var items = [try parseUnary()]
        while isKeyword("and") {
            advance()
            items.append(try parseUnary())
        }
        return items.count == 1 ? items[0] : .and(items)
    }

    private mutating func parseUnary() throws(AudienceError) -> AudienceExpression {
        guard isKeyword("not") else { return try parsePrimary() }
        try enter(current)
        advance()
        let inner = try parseUnary()
        depth -= 1
        return .not(inner)
    }

    private mutating func parsePrimary() throws(AudienceError) -> AudienceExpression {
        let token = current
        switch token.kind {
        case .leftParen:
            try enter(token)
            advance()
            let inner = try parseOr()
            try expect(.rightParen, "')'")
            depth -= 1
            return inner
        case .identifier(let name) where nextToken.kind == .leftParen && !Self.keywords.contains(name):
            return try parseCall(name, at: token)
        case .identifier(let name) where Self.keywords.contains(name):
            throw syntax("a condition")
        case .identifier, .quotedIdentifier:
            let operand = try parseOperand()
            try countCondition(token)
            return try parseTail(operand, at: token)
        default:
            throw syntax("a condition")
        }
    }

    // MARK: - Operands and comparisons

    private mutating func parseOperand() throws(AudienceError) -> AudienceOperand {
        let segmentStart = current
        var segments: [String] = []
        var quotedFirst = false
        while true {
            let token = current
            switch token.kind {
            case .identifier(let name) where !Self.keywords.contains(name) || !segments.isEmpty:
                segments.append(name)
            case .quotedIdentifier(let name):
                if segments.isEmpty { quotedFirst = true }
                guard !name.isEmpty else { throw invalid("an attribute name cannot be empty", at: token) }
                guard !Self.isIndexLike(name) else {
                    throw invalid("an attribute name cannot be an integer (array indexes are not supported)", at: token)
                }
                segments.append(name)
            default:
                throw syntax(segments.isEmpty ? "an attribute name" : "an attribute name after '.'")
            }
            advance()
            guard current.kind == .dot else { break }
            advance()
        }
        if case .document(let roots) = context, let first = segments.first, !roots.contains(first) {
            let token = segmentStart
            throw AudienceError(
                .invalidValue,
                "unknown name '\(first)': a path starts with " + roots.sorted().joined(separator: ", "),
                line: token.line, column: token.column, expected: roots.sorted().joined(separator: ", "))
        }
        if context == .subscriber, segments.count == 1, !quotedFirst {
            switch segments[0] {
            case "timezone": return .timezone
            case "locale": return .locale
            case "createdAt": return .createdAt
            default: break
            }
        }
        return .attribute(segments)
    }

    /// Postgres reads a path element as an array index when it parses as an integer (after leading
    /// white space); such names are refused so the evaluator and `#>` can never disagree.
    static func isIndexLike(_ name: String) -> Bool {
        var rest = Substring(name)
        while let first = rest.first,
            first == " " || first == "\t" || first == "\n" || first == "\r" || first == "\u{0B}" || first == "\u{0C}"
        {
            rest = rest.dropFirst()
        }
        if let first = rest.first, first == "+" || first == "-" { rest = rest.dropFirst() }
        return !rest.isEmpty && rest.allSatisfy { $0 >= "0" && $0 <= "9" }
    }

    private mutating func parseTail(_ operand: AudienceOperand, at start: AudienceToken) throws(AudienceError)
        -> AudienceExpression
    {
        let token = current
        switch token.kind {
        case .comparison(let op):
            advance()
            let literalToken = current
            if case .document = context, case .attribute(let left) = operand, startsOperand(literalToken) {
                guard case .attribute(let right) = try parseOperand() else { throw syntax("a path", at: literalToken) }
                if op != .equal && op != .notEqual, left == right {
                    throw invalid("a path compared with itself", at: literalToken)
                }
                return .comparePaths(left, op, right)
            }
            let literal = try parseLiteral()
            return .compare(operand, op, try typed(literal, for: operand, op: op, at: literalToken))
        case .identifier("in"):
            advance()
            try expect(.leftBracket, "'['")
            var values: [AudienceLiteral] = []
            while true {
                let literalToken = current
                if values.count == limits.maxListItems {
                    throw limit("more than \(limits.maxListItems) values in a list", at: literalToken)
                }
                values.append(try typed(try parseLiteral(), for: operand, op: .equal, at: literalToken))
                if current.kind == .comma {
                    advance()
                    continue
                }
                try expect(.rightBracket, "',' or ']'")
                break
            }
            if operand == .createdAt { throw invalid("createdAt cannot be used with 'in'", at: token) }
            return .isIn(operand, values)
        case .identifier("startsWith"):
            advance()
            guard case .string(let prefix) = current.kind else { throw syntax("a string") }
            if operand == .createdAt { throw invalid("createdAt cannot be used with startsWith", at: token) }
            advance()
            return .startsWith(operand, prefix)
        default:
            throw syntax("a comparison operator, 'in' or 'startsWith'")
        }
    }

    /// Whether `token` begins a path (in the document context, the right side of a comparison).
    private func startsOperand(_ token: AudienceToken) -> Bool {
        switch token.kind {
        case .quotedIdentifier: return true
        case .identifier(let name): return name != "true" && name != "false"
        default: return false
        }
    }

    private mutating func parseLiteral() throws(AudienceError) -> AudienceLiteral {
        let token = current
        switch token.kind {
        case .string(let value):
            advance()
            return .string(value)
        case .number(let text):
            guard let number = AudienceNumber(text) else { throw invalid("number out of range", at: token) }
            advance()
            return .number(number)
        case .identifier("true"):
            advance()
            return .bool(true)
        case .identifier("false"):
            advance()
            return .bool(false)
        default:
            throw syntax("a value (string, number, true or false)")
        }
    }

    private func typed(
        _ literal: AudienceLiteral, for operand: AudienceOperand, op: AudienceComparison,
        at token: AudienceToken
    ) throws(AudienceError) -> AudienceLiteral {
        switch operand {
        case .attribute:
            if case .bool = literal, op != .equal, op != .notEqual {
                throw invalid("true and false can only be compared with == or !=", at: token)
            }
            return literal
        case .timezone, .locale:
            guard case .string = literal else {
                throw invalid("\(operand == .timezone ? "timezone" : "locale") is compared with strings", at: token)
            }
            return literal
        case .createdAt:
            guard case .string(let text) = literal, let micros = EventTimestamp.parseMicroseconds(text) else {
                throw invalid(
                    "createdAt is compared with an ISO 8601 date-time string such as \"2024-05-01T00:00:00Z\"",
                    at: token)
            }
            return .timestamp(micros)
        }
    }

    // MARK: - Calls

    private mutating func parseCall(_ name: String, at token: AudienceToken) throws(AudienceError) -> AudienceExpression
    {
        guard Self.functions.contains(name) else {
            throw AudienceError(
                .syntaxError, "unknown function '\(name)'", line: token.line, column: token.column,
                expected: "one of " + Self.functions.joined(separator: ", "))
        }
        if context != .subscriber && name != "exists" {
            throw invalid("\(name)(...) is not available in a condition on an event", at: token)
        }
        try countCondition(token)
        advance()  // name
        advance()  // (
        switch name {
        case "exists":
            let operand = try parseOperand()
            try expect(.rightParen, "')'")
            return .exists(operand)
        case "in_topic":
            let key = try parseNonEmptyString("a topic key")
            try expect(.rightParen, "')'")
            return .inTopic(key)
        case "has_device":
            var environment: String?
            if current.kind != .rightParen {
                guard case .identifier("environment") = current.kind else { throw syntax("'environment' or ')'") }
                advance()
                try expect(.colon, "':'")
                let valueToken = current
                let value = try parseNonEmptyString("an environment")
                guard value == "production" || value == "sandbox" else {
                    throw invalid("environment is \"production\" or \"sandbox\"", at: valueToken)
                }
                environment = value
            }
            try expect(.rightParen, "')'")
            return .hasDevice(environment: environment)
        case "did":
            return .did(try parseEventClause(at: token))
        default:  // count
            let clause = try parseEventClause(at: token)
            guard case .comparison(let op) = current.kind else {
                throw syntax("a comparison operator after count(...)")
            }
            advance()
            let numberToken = current
            guard case .number(let text) = current.kind, let n = Int64(text), n >= 0 else {
                throw syntax("a whole number of events", at: numberToken)
            }
            advance()
            return .count(clause, op, n)
        }
    }

    private mutating func parseNonEmptyString(_ what: String) throws(AudienceError) -> String {
        guard case .string(let value) = current.kind else { throw syntax(what + " string") }
        guard !value.isEmpty else { throw invalid(what + " cannot be empty", at: current) }
        advance()
        return value
    }

    /// `("name" [, within: "7d"] [, where: expr])`; the opening parenthesis is consumed.
    private mutating func parseEventClause(at token: AudienceToken) throws(AudienceError) -> AudienceEventClause {
        eventClauses += 1
        if eventClauses > limits.maxEventClauses {
            throw limit("more than \(limits.maxEventClauses) did/count clauses", at: token)
        }
        var clause = AudienceEventClause(name: try parseNonEmptyString("an event name"))
        var seenWithin = false
        var seenWhere = false
        while current.kind == .comma {
            advance()
            let argument = current
            switch argument.kind {
            case .identifier("within") where !seenWithin:
                seenWithin = true
                advance()
                try expect(.colon, "':'")
                let valueToken = current
                guard case .string(let text) = current.kind else { throw syntax("a duration string such as \"7d\"") }
                guard let seconds = Self.durationSeconds(text) else {
                    throw invalid(
                        "a duration is a positive whole number followed by s, m, h, d or w, such as \"7d\"",
                        at: valueToken)
                }
                guard seconds <= Int64(limits.maxWithinDays) * 86_400 else {
                    throw limit("within is longer than \(limits.maxWithinDays) days", at: valueToken)
                }
                advance()
                clause.withinSeconds = seconds
            case .identifier("where") where !seenWhere:
                seenWhere = true
                advance()
                try expect(.colon, "':'")
                try enter(argument)
                let saved = context
                context = .event
                clause.condition = try parseOr()
                context = saved
                depth -= 1
            default:
                throw syntax(seenWithin && seenWhere ? "')'" : "'within:' or 'where:'")
            }
        }
        try expect(.rightParen, "',' or ')'")
        return clause
    }

    /// "7d" -> 604800. Units: s, m, h, d, w.
    static func durationSeconds(_ text: String) -> Int64? {
        guard let unit = text.last, text.count >= 2, text.count <= 8 else { return nil }
        let digits = text.dropLast()
        guard digits.first != "0", digits.allSatisfy({ $0 >= "0" && $0 <= "9" }), let n = Int64(digits) else {
            return nil
        }
        switch unit {
        case "s": return n
        case "m": return n * 60
        case "h": return n * 3600
        case "d": return n * 86_400
        case "w": return n * 604_800
        default: return nil
        }
    }
}
