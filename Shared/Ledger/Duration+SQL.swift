extension Duration {
    /// Whole and fractional seconds, for SQL intervals (`make_interval(secs => $n)`).
    var sqlSeconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
