"""Security: gateway API keys, tenants, input limits, rate limits, admin protection."""
