// Placeholder: replaced as the gateway is written.
