import Testing

@Test func placeholderIngestTests() {}
