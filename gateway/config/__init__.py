"""The YAML configuration: one pydantic model per section, the lowest gateway layer."""
