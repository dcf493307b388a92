"""`python -m docsgen [--check]`: write the generated reference pages, or check them."""

from __future__ import annotations

import argparse
import sys

from docsgen import ROOT, pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docsgen", description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a committed page is stale")
    args = parser.parse_args(argv)
    stale = []
    for path, render in pages().items():
        text = render()
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)
    if stale:
        print("stale generated pages (run `make docs-refs`): " + ", ".join(stale),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
