"""`a2a-gateway doctor` and `a2a-gateway usage` (issue 15, items 1 and 2)."""
