"""Building and running the servers: app, admin endpoints, readiness and reload."""
