"""Release gates without a broker (`mock-server gate`): a consumer's pact checked against the spec (`pact`), the
breaking changes between two versions of the spec and the recorded calls each one breaks (`spec`), their text and
JUnit reports; every file read bounded in bytes and nesting."""
