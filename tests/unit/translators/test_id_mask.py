"""Masking a run's ids in an answer's texts (translators/id_mask.py): the same texts
whichever way a text is searched, and one pass over a text where an answer holds many
ids (each id looked for in each text was quadratic: seconds for one large answer)."""

from __future__ import annotations

import string

import pytest
from a2a.types import a2a_pb2 as pb
from hypothesis import given
from hypothesis import strategies as st

from translators import id_mask
from translators.answer_diff import compare
from translators.id_mask import masker

_ID = st.text(alphabet=string.ascii_lowercase + string.digits + "-", min_size=8,
              max_size=14)
_WORD = st.text(alphabet=string.ascii_letters + " .,", max_size=12)


def _one_by_one(ids: set[str], text: str) -> str:
    for run_id in sorted(ids, key=lambda i: (-len(i), i)):
        text = text.replace(run_id, "{id}")
    return text


@given(ids=st.sets(_ID, min_size=1, max_size=30),
       picks=st.lists(st.tuples(_WORD, st.integers(0, 29)), max_size=12))
def test_one_pass_masks_what_looking_for_each_id_masks(ids: set[str],
                                                       picks: list[tuple[str, int]]) -> None:
    ordered = sorted(ids)
    text = "".join(word + ordered[n % len(ordered)] for word, n in picks) + "."
    # Ids that overlap in a text may be masked differently: compare where none does.
    if any(a != b and b in a for a in ids for b in ids):
        return
    assert id_mask._scanned(text, _prefixes(ids)) == _one_by_one(ids, text)


def _prefixes(ids: set[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for run_id in sorted(ids, key=lambda i: (-len(i), i)):
        found.setdefault(run_id[:id_mask.MIN_MASKED_ID], []).append(run_id)
    return found


def test_many_ids_are_masked_in_one_pass_over_each_text(monkeypatch: pytest.MonkeyPatch,
                                                        ) -> None:
    scans: list[str] = []
    real = id_mask._scanned

    def counted(text: str, by_prefix: dict[str, list[str]]) -> str:
        scans.append(text)
        return real(text, by_prefix)

    monkeypatch.setattr(id_mask, "_scanned", counted)
    many = {f"artifact-{n:06d}" for n in range(5_000)}
    mask = masker(many)
    assert mask("built from artifact-000042 and artifact-004999") == \
        "built from {id} and {id}"
    assert scans == ["built from artifact-000042 and artifact-004999"]
    few = masker({"artifact-000042", "task-0000001"})
    assert few("built from artifact-000042") == "built from {id}" and len(scans) == 1
    assert masker(set())("built from artifact-000042") == "built from artifact-000042"


def test_two_large_answers_with_their_own_ids_agree() -> None:
    # Each agent names its artifacts its own way, and each artifact's text quotes its id.
    def task(prefix: str) -> pb.Task:
        t = pb.Task(id=f"{prefix}-task-000", status=pb.TaskStatus(
            state=pb.TaskState.TASK_STATE_COMPLETED))
        for n in range(3_000):
            t.artifacts.add(artifact_id=f"{prefix}-art-{n:05d}").parts.add(
                text=f"part {n} of {prefix}-art-{n:05d}")
        return t

    assert compare(task("primary"), task("candidate")) == []
    differs = task("candidate")
    differs.artifacts[1_234].parts[0].text = "part 1234 of somewhere else"
    assert [d.path for d in compare(task("primary"), differs)] == [
        "artifacts[1234].parts[0].text"]
