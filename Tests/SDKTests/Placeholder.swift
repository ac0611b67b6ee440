import Testing

@Test func placeholderSDKTests() {}
