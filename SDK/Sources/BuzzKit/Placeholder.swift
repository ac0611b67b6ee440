// Placeholder: replaced as the SDK is written.
