"""`workers: N`: several gateway processes on the same listeners under one supervisor
(README "Workers")."""
