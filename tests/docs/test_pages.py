"""What a newcomer reads: a short README whose links all lead somewhere, and pages free of
the project's internal references (issue numbers, scenario codes, review rows)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))

# Markdown links and images: [text](target) — the target up to a space or ")".
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# Internal references a user cannot follow: issue numbers, the interop scenario codes
# (I1-I14), review rows and scenario letters (D-h), the wire reference's sections, work
# "stops" and commit hashes.
INTERNAL = [
    (re.compile(r"\bissues? ?#?\d+", re.I), "an issue number"),
    (re.compile(r"\bissue-\d+", re.I), "an issue number"),
    (re.compile(r"\bI\d{1,2}\b"), "a scenario code"),
    (re.compile(r"\bI\d{1,2}[\u2013-]I\d{1,2}\b"), "a range of scenario codes"),
    (re.compile(r"\bD-[a-z]\b"), "a scenario letter"),
    (re.compile(r"\breview row", re.I), "a review row"),
    (re.compile(r"\breference §"), "a section of the internal wire reference"),
    (re.compile(r"\bstop \d+\b|\bthis stop\b|\bthe last stop\b", re.I), "a work session"),
    (re.compile(r"`(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}`"), "a commit hash"),
]


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; the docs/ pages hold the rest"


def test_the_readme_starts_with_the_two_commands() -> None:
    head = "\n".join(README.read_text(encoding="utf-8").splitlines()[:20])
    assert "make run" in head and "make test" in head


def _links(text: str) -> list[str]:
    # Links inside code are text, not links.
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


def test_every_relative_link_of_the_readme_resolves() -> None:
    links = _links(README.read_text(encoding="utf-8"))
    assert len(links) >= 10
    broken = []
    for target in links:
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (ROOT / target.split("#", 1)[0]).exists():
            broken.append(target)
    assert broken == []


def test_the_link_check_sees_a_broken_link() -> None:
    assert _links("see [x](docs/none.md) and `[y](z.md)`") == ["docs/none.md"]


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_internal_references(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = [f"line {text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r} ({what})"
             for pattern, what in INTERNAL for m in pattern.finditer(text)]
    assert found == []


@pytest.mark.parametrize("sample, caught", [
    ("as issue 13 says", True), ("the issue-14 target", True), ("scenario I7 passes", True),
    ("seed scenarios I1\u2013I14", True), ("row D-h", True), ("(reference §3.8)", True),
    ("in this stop", True), ("against `ecb6d8b`", True),
    ("issue time and a random token", False), ("HTTP 404 on I/O", False),
    ("`8388608` bytes", False), ("`deadbeef` as a key", False),
])
def test_the_internal_reference_patterns(sample: str, caught: bool) -> None:
    assert any(pattern.search(sample) for pattern, _ in INTERNAL) is caught
