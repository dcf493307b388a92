"""What the gateway writes on stdout/stderr: the JSON or console lines, the stdlib bridge,
the access line, and the `log:` config (README "Logs")."""
