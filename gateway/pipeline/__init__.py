"""The call pipeline: route a canonical call to its tenant's backend, within limits."""
