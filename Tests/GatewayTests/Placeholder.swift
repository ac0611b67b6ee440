import Testing

@Test func placeholderGatewayTests() {}
