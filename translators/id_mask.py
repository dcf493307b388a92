"""Masking a run's ids where an answer's texts quote them (translators/answer_view.py):
two agents name their tasks, messages and artifacts each its own way, so a text that
quotes one ("task 3f2a… done") is compared with the id masked."""

from __future__ import annotations

from collections.abc import Callable

# Shorter ids ("t1") would be masked inside ordinary words; real ids (UUIDs) are longer.
MIN_MASKED_ID = 8

# A text with the run's ids it quotes masked.
Masker = Callable[[str], str]


def masker(ids: set[str]) -> Masker:
    """A function that masks each of ``ids`` (each at least MIN_MASKED_ID long) in a text
    as ``{id}``: the run's own ids, which two agents never share."""
    # Longest first: an id that contains another is masked whole.
    ordered = sorted(ids, key=lambda i: (-len(i), i))
    count = len(ordered)
    by_prefix: dict[str, list[str]] = {}  # made at the first text worth a scan
    if not ordered:
        return str

    def mask(text: str) -> str:
        # Looking for each id in the text costs ~count x (100 + len) steps in C; one pass
        # over the text that looks its positions up by the ids' first characters costs
        # ~500 x len (in Python): an answer with thousands of ids (artifacts, messages)
        # was quadratic, seconds on the event loop for one comparison.
        length = len(text)
        if count * (100 + length) <= 500 * length:
            for run_id in ordered:
                if run_id in text:
                    text = text.replace(run_id, "{id}")
            return text
        if not by_prefix:
            for run_id in ordered:  # longest first within each prefix
                by_prefix.setdefault(run_id[:MIN_MASKED_ID], []).append(run_id)
        return _scanned(text, by_prefix)
    return mask


def _scanned(text: str, by_prefix: dict[str, list[str]]) -> str:
    """``text`` with each id of ``by_prefix`` it holds masked, left to right (the longest
    id that starts at a place)."""
    out: list[str] = []
    start = i = 0
    last = len(text) - MIN_MASKED_ID
    while i <= last:
        for run_id in by_prefix.get(text[i:i + MIN_MASKED_ID], ()):
            if text.startswith(run_id, i):
                out += (text[start:i], "{id}")
                i = start = i + len(run_id)
                break
        else:
            i += 1
    return "".join(out) + text[start:] if out else text
