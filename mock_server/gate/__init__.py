"""Release gates without a broker (`mock-server gate`): a consumer's pact against the spec, a spec change's breaking changes and the recorded calls they break."""
