import BuzzKitWire

extension WorkflowEngine {
    /// The send policy's answer for a send the runtime carried out (`Policy.decide`, in the
    /// transaction that writes the message), recorded on the step that made it: a suppressed send
    /// ends `suppressed` with the reason, so the run page shows it and `{suppressed: step}` reads
    /// it. The run goes on either way: the engine walked past the send already, and a branch that
    /// reads it asked (`askReceipts`), so it decides after this. Pure; nil or an unknown message
    /// leaves the state as it is.
    public static func recordPolicy(
        _ state: WorkflowRunState, messageId: String, suppressed: SuppressionReason?
    ) -> WorkflowRunState {
        guard let suppressed, let i = state.outcomes.lastIndex(where: { $0.messageIds.contains(messageId) })
        else { return state }
        var state = state
        guard state.outcomes[i].suppressed == nil else { return state }
        state.outcomes[i].suppressed = suppressed
        // A local window's fallback push keeps its own decision word; the reason says it.
        if state.outcomes[i].decision == .sent { state.outcomes[i].decision = .suppressed }
        state.outcomes[i].reason = "suppressed: \(suppressed.rawValue) (\(suppressed.explanation))"
        return state
    }
}
