"""A tenant's route to its backend, with per-operation interface fallback."""
