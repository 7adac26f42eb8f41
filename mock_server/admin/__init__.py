"""The test-only admin API under /__mock: its handlers, verify and assertions, the dashboard and docs pages."""
