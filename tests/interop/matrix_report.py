"""Render the compatibility matrix (tests/interop/test_matrix.py) as the section of the docs
page docs/compatibility.md.

    python tests/interop/matrix_report.py RESULTS.json [--page docs/compatibility.md] [--check]

RESULTS.json is what the matrix suite writes when ``A2A_MATRIX_RESULTS`` names a file
(``make matrix`` does both steps). The section between ``<!-- matrix:start -->`` and
``<!-- matrix:end -->`` is replaced; nothing else on the page is touched. The rendering
is deterministic: no timings, ids or ports, only what the cells and the log say.
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

START = "<!-- matrix:start -->"
END = "<!-- matrix:end -->"
PASS, RAW, EXPECTED, NA = "pass", "raw", "expected", "n/a"
PASSING = (PASS, RAW)
BINDING_LABEL = {"JSONRPC": "JSON-RPC", "HTTP+JSON": "HTTP+JSON", "GRPC": "gRPC"}


def dialect(version: str, binding: str) -> str:
    return f"v{version} {BINDING_LABEL[binding]}"


class Footnotes:
    """Reasons numbered in order of first use, so the same input renders the same text."""

    def __init__(self) -> None:
        self.notes: list[str] = []

    def ref(self, note: str) -> int:
        if note not in self.notes:
            self.notes.append(note)
        return self.notes.index(note) + 1


def _cell(cell: dict[str, Any], notes: Footnotes) -> str:
    status = cell["status"]
    said = cell.get("note") or []  # one note, or several
    refs = [notes.ref(n) for n in ([said] if isinstance(said, str) else said)]
    mark = f"<sup>{','.join(map(str, refs))}</sup>" if refs else ""
    if status == PASS:
        return "✅" + mark
    if status == RAW:
        return "✅ raw" + mark
    if status == NA:
        return f"— {cell['text']}{mark}"
    return f"❌ {cell['text']}{mark}"


def render(results: dict[str, Any]) -> str:
    """The markdown between the markers (without them)."""
    operations: list[list[str]] = results["operations"]
    pairs: list[dict[str, Any]] = results["pairs"]
    notes = Footnotes()
    total = len(pairs) * len(operations)
    passing = sum(1 for p in pairs for c in p["cells"].values() if c["status"] in PASSING)
    header = ["Client", "Backend", *(label for _, label in operations), "Pass"]
    lines = [
        f"**{passing} of {total} cells pass** ({len(pairs)} client x backend pairs x "
        f"{len(operations)} operations). Clients are the official a2a-sdk 0.3.26 / 1.3.0 "
        "clients, backends the a2a-sdk 0.3.26 / 1.3.0 agents, all real processes; "
        "`make matrix` regenerates this section from `tests/interop/test_matrix.py`.",
        "",
        "✅ works · ✅ raw: works, the SDK client cannot make the call so the test sends "
        "that version's wire shape itself · ❌ what the client gets instead · — the "
        "operation does not exist in the client's protocol version",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    for pair in pairs:
        cells = [_cell(pair["cells"][key], notes) for key, _ in operations]
        ok = sum(1 for key, _ in operations if pair["cells"][key]["status"] in PASSING)
        lines.append("| " + " | ".join([
            dialect(pair["client"], pair["binding"]),
            f"{pair['tenant']} ({dialect(pair['backendVersion'], pair['backendBinding'])})",
            *cells, f"{ok}/{len(operations)}"]) + " |")
    lines.append("")
    lines.extend(f"{n}. {note}" for n, note in enumerate(notes.notes, 1))
    lines += ["", "**Lossy fields per pair** (the `dropped` field of the gateway's log "
              "lines for the pair's calls; indices folded to `[]`):", ""]
    lossy = [p for p in pairs if p["dropped"]]
    if not lossy:
        lines.append("None: no call of the matrix lost a field.")
    for pair in lossy:
        by_op: dict[str, list[str]] = {}
        for entry in pair["dropped"]:
            op, _, path = entry.partition(": ")
            by_op.setdefault(op, []).append(f"`{path}`")
        detail = "; ".join(f"{op}: {', '.join(paths)}" for op, paths in sorted(by_op.items()))
        lines.append(f"- {dialect(pair['client'], pair['binding'])} → {pair['tenant']}: "
                     f"{detail}")
    clean = len(pairs) - len(lossy)
    if lossy:
        lines += ["", f"The other {clean} pairs lost nothing."]
    return "\n".join(lines)


PAGE = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"


def replace_section(readme: str, section: str) -> str:
    start, end = readme.index(START) + len(START), readme.index(END)
    return readme[:start] + "\n" + section + "\n" + readme[end:]


def current_section(readme: str) -> str:
    return readme[readme.index(START) + len(START):readme.index(END)].strip("\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--page", type=Path, default=PAGE)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the page's section is not what RESULTS renders")
    args = parser.parse_args()
    section = render(json.loads(args.results.read_text(encoding="utf-8")))
    readme = args.page.read_text(encoding="utf-8")
    if args.check:
        if current_section(readme) != section:
            print(f"{args.page}: the matrix section is out of date; run `make matrix`",
                  file=sys.stderr)
            return 1
        return 0
    args.page.write_text(replace_section(readme, section), encoding="utf-8")
    print(f"{args.page}: matrix section written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
