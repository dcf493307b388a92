"""The shell blocks of docs/deployment.md that the image tests run: each follows a
`<!-- image-test: NAME -->` marker, so the page shows exactly what was run."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.image.engine import DOCKER, ROOT

PAGE = ROOT / "docs" / "deployment.md"


def block(name: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(rf"<!-- image-test: {re.escape(name)} -->\s*```sh\n(.*?)```", text, re.DOTALL)
    assert found, f"docs/deployment.md has no block marked image-test: {name}"
    return found[1]


def run_block(name: str, *, replace: dict[str, str] | None = None,
              env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """Run a block with bash -euo pipefail from the repository's root; `replace` names each
    text the test changes (host ports, the base image) so nothing else differs."""
    script = block(name)
    for old, new in (replace or {}).items():
        assert old in script, f"{old!r} is not in the {name} block"
        script = script.replace(old, new)
    # Debian's docker CLI first: it matches the daemon (tests/image/engine.py).
    path = f"{Path(DOCKER).parent}:{os.environ['PATH']}"
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout, check=False,
                          env={**os.environ, "PATH": path, **(env or {})})
    assert proc.returncode == 0, f"block {name} failed:\n{script}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout
