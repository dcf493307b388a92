"""TLS contexts (listeners, backends) and the dev certificate; transport, not auth."""
