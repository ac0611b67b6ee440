import Testing

@Test func placeholderRedisTests() {}
