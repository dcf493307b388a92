"""Migration mode (docs/migration.md): a legacy agent (the primary) and its successor (the
candidate) behind one tenant — shadow copies compared by meaning, a sticky canary,
automatic rollback, and a report."""
