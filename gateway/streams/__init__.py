"""Serving streams: event bounds and v0.3 repair, turns, deadlines, open-stream registry."""
