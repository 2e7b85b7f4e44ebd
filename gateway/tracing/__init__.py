"""Request tracing: stage marks on the hot path, OpenTelemetry spans at the edge."""
