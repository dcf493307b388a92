"""A migration report as people read it (gateway/migration/render.py): the CLI's table
says every figure of the report and each difference as `kind  path  primary → candidate`;
the pages show the same, escape everything an agent said, and hold no script and no
reference to anything outside them."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from gateway.migration.render import index_page, page, table, tenants_table
from tests.support.migration_sample import HOSTILE, listed, sample_report


class Parsed(HTMLParser):
    """Every tag with its attributes, and the text of every <pre>, <td> and <th>."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.pre: list[str] = []
        self.cells: list[str] = []
        self._open: str | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("pre", "td", "th"):
            self._open = tag
            (self.pre if tag == "pre" else self.cells).append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == self._open:
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            target = self.pre if self._open == "pre" else self.cells
            target[-1] += data


# The table.

def test_the_table_says_every_figure_of_the_report() -> None:
    text = table(sample_report())
    assert text.splitlines()[0] == ("travel (canary): the candidate gets 30% of new "
                                    "conversations")
    assert "JSONRPC/0.3" in text and "JSONRPC/1.0" in text
    lines = text.splitlines()
    primary = next(line for line in lines if line.strip().startswith("primary    120"))
    assert primary.split() == ["primary", "120", "0", "0", "0", "3.1", "ms", "7.9", "ms"]
    candidate = next(line for line in lines if line.strip().startswith("candidate  52"))
    assert candidate.split() == ["candidate", "52", "1", "2", "5", "4.0", "ms", "9.2", "ms"]
    assert "shadow: 200 compared, 197 agreed (98.5%), 4 skipped, 1 failed\n" in text
    assert next(line for line in lines if line.startswith("  text ")).split() == \
        ["text", "3", "0.5%"]
    assert ("rollback: armed, over the last 60 s, once it holds 20 calls: the candidate's "
            "error rate > 20%, timeout rate > 25% or difference rate > 50% (now 17 calls, "
            "30 comparisons)\n") in text
    assert "events, newest first (2 of 2)" in text
    assert "candidate error rate 0.45 over 60 s (min 20 calls) > 0.2" in text
    assert "30% → 0%" in text and "10% → 30%" in text


def test_the_table_lists_each_difference_as_kind_path_primary_candidate() -> None:
    text = table(sample_report())
    assert "disagreements, newest first (2)" in text
    assert ("  2026-12-05T13:00:01Z  SendMessage  request ab12cd  primary 3.2 ms, "
            "candidate 4.1 ms") in text
    assert ('      text  artifacts[0].parts[0].text  "Echo: hi" → '
            '"<script>alert(1)</script>\\u001b[31m"') in text
    assert '      state  status.state  "completed" → "failed"' in text


def test_a_disagreement_with_more_differences_than_kept_says_how_many() -> None:
    report = sample_report()
    report["disagreements"][0]["differences_not_shown"] = 1_234
    assert "      and 1234 more differences, not kept\n" in table(report)
    assert "<p>and 1234 more differences, not kept</p>" in page(report)
    report["disagreements"][0]["differences_not_shown"] = "lots"  # not a count: unsaid
    assert "more differences" not in table(report) + page(report)


def test_the_table_never_writes_a_terminal_escape() -> None:
    hostile = sample_report(tenant="t\x1b]0;owned\x07", mode="canary\u202e")
    hostile["events"][0]["reason"] = "bad\x1b[2J\r\nnews"
    text = table(hostile)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "\r" not in text
    assert text.startswith("t\\u001b]0;owned\\u0007 (canary\\u202e)")
    assert "bad\\u001b[2J\\u000d\\u000anews" in text


def test_the_table_says_a_rollback_a_configured_share_and_a_long_value_cut() -> None:
    report = sample_report(share=0.0, configured_share=0.3)
    report["rollback"].update(rolled_back=True, rolled_back_by="automatic", max_diff_rate=1.0)
    report["disagreements"][1]["differences"][0]["candidate"] = "x" * 500
    text = table(report)
    assert text.splitlines()[0].endswith("the candidate gets 0% of new conversations "
                                         "(configured: 30%)")
    # max_diff_rate 1: differences never roll back, so the rule does not name them.
    assert ("rollback: rolled back by a threshold, over the last 60 s, once it holds 20 "
            "calls: the "
            "candidate's error rate > 20% or timeout rate > 25% (now") in text
    assert '"completed" → "' + "x" * 58 + "…" in text


def test_the_table_of_a_report_without_any_activity() -> None:
    text = table({"tenant": "quiet", "mode": "shadow", "share": 0.0, "configured_share": 0.0,
                  "arms": {}, "shadow": {"compared": 0, "agreed": 0, "agreement_rate": None}})
    assert "shadow: 0 compared, 0 agreed (-), 0 skipped" in text
    assert "no kind of difference above the noise" in text
    assert "events: none yet" in text and "disagreements: none kept" in text
    assert "p50" in text and "-" in text


def test_the_table_of_a_tenant_whose_migration_is_off() -> None:
    # What the core reports for a migration block in mode `off`: little.
    assert table({"tenant": "legacy", "mode": "off"}) == (
        "legacy (off): the primary answers every call\n")
    report = sample_report(mode="off")
    del report["rollback"]
    assert "\nrollback: none reported\n" in table(report)
    assert "<p>None reported.</p>" in page({"tenant": "legacy", "mode": "off"})


def test_a_mode_that_makes_no_copies_says_so() -> None:
    report = sample_report(mode="canary")
    report["shadow"]["active"] = False
    assert "4 skipped, 1 failed (no copies made in this mode)" in table(report)


def test_the_tenants_table() -> None:
    text = tenants_table({"tenants": [listed(sample_report())]})
    assert text.splitlines()[2].split() == ["travel", "canary", "30%", "(30%)",
                                            "JSONRPC/0.3", "→", "JSONRPC/1.0", "98.5%",
                                            "armed"]
    assert tenants_table({"tenants": []}) == "no tenant has a migration block\n"


# The pages.

def _no_script_nor_outside_reference(text: str) -> Parsed:
    parsed = Parsed(text)
    tags = {tag for tag, _ in parsed.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "form", "base"}
    for tag, attrs in parsed.tags:
        assert "http-equiv" not in attrs, tag
        assert not [a for a in attrs if a.startswith("on") or a in ("src", "srcset")], tag
        href = attrs.get("href")
        assert href is None or ("://" not in href and not href.startswith(("/", "javascript"))), href
    return parsed


def test_the_page_escapes_what_the_agents_said() -> None:
    report = sample_report()
    report["disagreements"][0]["request"] = {"message": {"parts": [
        {"text": "\"><img src=x onerror=alert(2)>"}]}}
    text = page(report)
    assert "<script" not in text.lower() and "<img" not in text.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    parsed = _no_script_nor_outside_reference(text)
    # The escaped text reads back as what the candidate said (its escape made visible).
    assert any("<script>alert(1)</script>\\u001b[31m" in cell for cell in parsed.cells)


def test_the_page_shows_the_disagreements_side_by_side() -> None:
    report = sample_report()
    parsed = Parsed(page(report))
    # Request, primary answer, candidate answer of each disagreement, pretty-printed.
    assert len(parsed.pre) == 6
    first = report["disagreements"][0]
    # Each view is its JSON, hidden characters written as JSON escapes: it reads back.
    views = [json.loads(p) for p in parsed.pre[:3]]
    assert views == [first["request"], first["primary"], first["candidate"]]
    assert views[2]["artifacts"][0]["parts"][0]["text"] == HOSTILE
    assert parsed.pre[1].splitlines()[1] == '  "artifacts": ['  # indented: read, not parsed
    assert json.loads(parsed.pre[4]) == {"status": {"state": "completed"}}
    # And what differs, in a table: kind, path, primary, candidate.
    at = parsed.cells.index("status.state")
    assert parsed.cells[at - 1:at + 3] == ["state", "status.state", '"completed"', '"failed"']


def test_the_page_says_every_figure_of_the_report() -> None:
    report = sample_report(share=0.0)
    report["rollback"].update(rolled_back=True, rolled_back_by="admin API (10.0.0.1)")
    parsed = Parsed(page(report))
    cells = parsed.cells
    at = cells.index("candidate", cells.index("timeouts"))
    assert cells[at:at + 7] == ["candidate", "52", "1", "2", "5", "4.0 ms", "9.2 ms"]
    assert cells[cells.index("text"):cells.index("text") + 3] == ["text", "3", "0.5%"]
    at = cells.index("2026-12-05T13:00:00Z")
    assert cells[at:at + 5] == ["2026-12-05T13:00:00Z", "rollback", "30% → 0%", "automatic",
                                "candidate error rate 0.45 over 60 s (min 20 calls) > 0.2"]
    text = page(report)
    assert "the candidate gets 0% of new conversations (configured: 30%)" in text
    assert '<strong class="bad">rolled back by hand (admin API (10.0.0.1))</strong>' in text
    assert "200 compared, 197 agreed (98.5%), 4 skipped, 1 failed." in text
    assert "<title>Migration: travel</title>" in text


def test_the_page_of_a_report_without_disagreements() -> None:
    text = page(sample_report(disagreements=[], events=[]))
    assert "<p>None kept.</p>" in text and "<p>None yet.</p>" in text
    assert "<pre>" not in text


def test_the_index_links_each_tenant_to_its_page() -> None:
    other = listed(sample_report(tenant='a"b<c> d', mode="shadow"))
    text = index_page({"tenants": [listed(sample_report()), other]})
    parsed = _no_script_nor_outside_reference(text)
    links = [attrs["href"] for tag, attrs in parsed.tags if tag == "a"]
    assert links == ["travel/page", "a%22b%3Cc%3E%20d/page"]
    assert "a&quot;b&lt;c&gt; d" in text
    assert parsed.cells[parsed.cells.index("travel"):parsed.cells.index("travel") + 7] == [
        "travel", "JSONRPC/0.3 → JSONRPC/1.0", "canary", "30% (30%)", "52 / 1", "98.5%",
        "armed"]


@pytest.mark.parametrize("render", [page, lambda r: index_page({"tenants": [r]})])
def test_a_page_holds_no_raw_control_character(render: object) -> None:
    report = sample_report(tenant="t\x00\u202e\ud800")
    text = render(report)  # type: ignore[operator]
    assert text.encode("utf-8")  # a lone surrogate would not encode: the page would fail
    assert "\x00" not in text and "\u202e" not in text
    assert "t\\u0000\\u202e\\ud800" in text


def test_the_index_of_no_tenant() -> None:
    assert "No tenant has a migration block." in index_page({"tenants": []})


def test_an_answer_shows_its_hidden_characters_and_still_reads_as_its_json() -> None:
    report = sample_report()
    report["disagreements"][0]["primary"] = {"text": "a\u202eb\u2028c\x85d"}
    pre = Parsed(page(report)).pre[1]
    assert "\u202e" not in pre and "\u2028" not in pre and "\x85" not in pre
    assert '"text": "a\\u202eb\\u2028c\\u0085d"' in pre
    assert json.loads(pre) == report["disagreements"][0]["primary"]
