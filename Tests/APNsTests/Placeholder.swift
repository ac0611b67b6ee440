import Testing

@Test func placeholderAPNsTests() {}
