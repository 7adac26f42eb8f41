"""verify-provider: the same flows against a real provider and the mock (the oracle), and where they differ."""
