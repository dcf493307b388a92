"""What the gateway tells operators: logs, metrics, traces."""
