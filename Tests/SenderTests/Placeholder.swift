import Testing

@Test func placeholderSenderTests() {}
