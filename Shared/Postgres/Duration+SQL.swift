extension Duration {
    /// Whole and fractional seconds, for SQL intervals (`make_interval(secs => $n)`) and for
    /// comparing with a `TimeInterval`.
    public var sqlSeconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
