"""The built-in live dashboard: a static page fed by a JSON endpoint."""
