"""What the mock tells the outside about itself: OpenTelemetry spans (tracing.py, the SDK in otel.py, imported only
when tracing is on), W3C trace context read from a request (trace_context.py) and Prometheus metrics
(metrics.py, prometheus_client imported at the first scrape). docs/telemetry.md is the user's page."""
