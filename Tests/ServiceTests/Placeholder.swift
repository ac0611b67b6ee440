import Testing

@Test func placeholderServiceTests() {}
