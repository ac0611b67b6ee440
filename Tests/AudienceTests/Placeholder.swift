import Testing

@Test func placeholderAudienceTests() {}
