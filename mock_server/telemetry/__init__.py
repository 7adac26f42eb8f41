"""What the mock tells the outside about itself: spans, trace ids and metrics (docs/telemetry.md)."""
