"""What every section of the configuration is: strict. An unknown key is refused (a typo
is not silently a default), and so is a number that is not one (`.inf`, `.nan`: every wait
and bound the configuration sets is finite)."""

from __future__ import annotations

from pydantic import ConfigDict

STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)
