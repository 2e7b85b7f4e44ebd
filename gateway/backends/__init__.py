"""Backend replicas: live state, health checks."""
