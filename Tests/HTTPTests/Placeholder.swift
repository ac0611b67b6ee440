import Testing

@Test func placeholderHTTPTests() {}
