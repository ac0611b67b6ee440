// Placeholder: replaced as the service is written.
