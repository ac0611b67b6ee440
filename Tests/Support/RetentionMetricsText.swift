/// What `/metrics` shows for a retention owner's table after its first pass over an empty schema
/// (`RetentionMetrics`): the setting, four partitions made ahead, none kept back, and no data kept
/// yet (an empty legacy partition). The retention services' tests each read these lines.
public enum RetentionMetricsText {
    public static func afterFirstPass(table: String, days: Int) -> [String] {
        [
            #"bk_retention_days{table="\#(table)"} \#(days)"#,
            #"bk_retention_partitions_ahead{table="\#(table)"} 4"#,
            #"bk_retention_partitions_kept{table="\#(table)"} 0"#,
            #"bk_retention_oldest_seconds{table="\#(table)"} 0"#
        ]
    }
}
