"""A migration report (docs/migration.md, "The report") as people read it: the CLI's text
table, the admin web page of one tenant and the list of tenants. Pure: a report dict in,
a string out.

The report quotes answers of agents the operator does not control, so every string from
it is shown, never obeyed: control and format characters (terminal escapes, bidi
overrides, NUL, lone surrogates) are written as ``\\uXXXX`` in both outputs, and the page
escapes all of it for HTML. The page carries no script and loads nothing: it is served
with a Content-Security-Policy that would refuse both.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from gateway.migration.html_style import STYLE

# Terminal escapes and other invisible characters: C0/C1 controls, the Unicode format
# characters that reorder or hide text, line/paragraph separators, lone surrogates.
_HIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f"
                     "\ufeff\ufff9-\ufffb\ud800-\udfff]")
_HIDDEN_BUT_NEWLINE = re.compile(_HIDDEN.pattern.replace("\x00-\x1f", "\x00-\x09\x0b-\x1f"))
TABLE_EVENTS = 10  # events the text table shows (the page shows every one in the report)
_VALUE_WIDTH = 60  # characters of a differing value the text table shows


def _visible(text: str, hidden: re.Pattern[str] = _HIDDEN) -> str:
    return hidden.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _text(value: Any) -> str:
    return _visible("-" if value is None else str(value))


def _short(text: str, width: int = _VALUE_WIDTH) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _json_line(value: Any) -> str:
    return _visible(json.dumps(value, ensure_ascii=False, sort_keys=True))


def _json_block(value: Any) -> str:
    # json.dumps escapes the newlines inside strings: the ones left are its own layout.
    return _visible(json.dumps(value, ensure_ascii=False, sort_keys=True, indent=2),
                    _HIDDEN_BUT_NEWLINE)


def _pct(rate: Any) -> str:
    if not isinstance(rate, int | float) or isinstance(rate, bool):
        return "-"
    return f"{rate * 100:.1f}".removesuffix(".0") + "%"


def _ms(value: Any) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "-"
    return f"{value:.1f} ms"


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# What the report says, as rows and sentences both outputs share.

def _headline(report: dict[str, Any]) -> str:
    if report.get("mode") == "off":
        return "the primary answers every call"
    share, configured = report.get("share"), report.get("configured_share")
    line = f"the candidate gets {_pct(share)} of new conversations"
    return line + ("" if configured == share else f" (configured: {_pct(configured)})")


def summary(report: dict[str, Any]) -> str:
    """One line: the tenant, its mode and the candidate's share."""
    return f"{_text(report.get('tenant'))} ({_text(report.get('mode'))}): {_headline(report)}"


def _label(report: dict[str, Any], arm: str) -> str:
    return _text(_dict(report.get(arm)).get("label"))


_ARM_HEADER = ("arm", "calls", "errors", "timeouts", "fell back", "p50", "p95")


def _arm_rows(report: dict[str, Any]) -> list[list[str]]:
    arms = _dict(report.get("arms"))
    rows = []
    for name in ("primary", "candidate"):
        arm = _dict(arms.get(name))
        rows.append([name, _text(arm.get("calls", 0)), _text(arm.get("errors", 0)),
                     _text(arm.get("timeouts", 0)), _text(arm.get("fell_back", 0)),
                     _ms(arm.get("p50_ms")),
                     _ms(arm.get("p95_ms"))])
    return rows


def _shadow_line(shadow: dict[str, Any]) -> str:
    line = (f"{_text(shadow.get('compared', 0))} compared, {_text(shadow.get('agreed', 0))} "
            f"agreed ({_pct(shadow.get('agreement_rate'))}), "
            f"{_text(shadow.get('skipped', 0))} skipped")
    if "failed" in shadow:  # copies that could not be compared
        line += f", {_text(shadow['failed'])} failed"
    return line + (" (no copies made in this mode)" if shadow.get("active") is False else "")


_KIND_HEADER = ("kind", "differences", "A/A noise")


def _kind_rows(shadow: dict[str, Any]) -> list[list[str]]:
    noise = _dict(shadow.get("noise_by_kind"))
    return [[_text(kind), _text(count), _pct(noise.get(kind))]
            for kind, count in sorted(_dict(shadow.get("diffs_by_kind")).items())]


def _rollback_state(rollback: dict[str, Any]) -> str:
    if not rollback:  # a migration in mode `off` reports none
        return "-"
    if rollback.get("rolled_back"):
        by = rollback.get("rolled_back_by")
        return ("rolled back by a threshold" if by == "automatic" else
                f"rolled back by hand ({_text(by)})" if by else "rolled back")
    return "off (no automatic rollback)" if rollback.get("enabled") is False else "armed"


def _rollback_rule(rollback: dict[str, Any]) -> str:
    limits = [f"error rate > {_pct(rollback.get('max_error_rate'))}",
              f"timeout rate > {_pct(rollback.get('max_timeout_rate'))}"]
    diff = rollback.get("max_diff_rate")
    if isinstance(diff, int | float) and diff < 1:  # 1: differences never roll back
        limits.append(f"difference rate > {_pct(diff)}")
    window = rollback.get("window_seconds")
    span = f"{window:g} s" if isinstance(window, int | float) else _text(window)
    rule = (f"over the last {span}, once it holds {_text(rollback.get('min_calls'))} calls: "
            f"the candidate's {', '.join(limits[:-1])} or {limits[-1]}")
    if "candidate_calls" in rollback:  # what the window holds now
        rule += (f" (now {_text(rollback['candidate_calls'])} calls, "
                 f"{_text(rollback.get('comparisons', 0))} comparisons)")
    return rule


_EVENT_HEADER = ("at", "event", "share", "by", "reason")


def _event_row(event: dict[str, Any]) -> list[str]:
    return [_text(event.get("at")), _text(event.get("kind")),
            f"{_pct(event.get('from_share'))} → {_pct(event.get('to_share'))}",
            _text(event.get("by")), _text(event.get("reason", ""))]


def _disagreement_line(d: dict[str, Any]) -> str:
    return (f"{_text(d.get('at'))}  {_text(d.get('operation'))}  request "
            f"{_text(d.get('request_id'))}  primary {_ms(d.get('primary_ms'))}, "
            f"candidate {_ms(d.get('candidate_ms'))}")


_DIFF_HEADER = ("kind", "path", "primary", "candidate")


def _diff_row(diff: dict[str, Any], width: int | None = _VALUE_WIDTH) -> list[str]:
    def value(side: str) -> str:
        shown = _json_line(diff[side]) if side in diff else "(absent)"
        return shown if width is None else _short(shown, width)

    return [_text(diff.get("kind")), _text(diff.get("path")), value("primary"),
            value("candidate")]


# The CLI's table.

def _columns(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None,
             indent: str = "  ") -> list[str]:
    """Aligned columns (the last one as long as it is)."""
    cells = [list(header)] if header else []
    cells += [list(r) for r in rows]
    if not cells:
        return []
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]) - 1)]
    lines = [indent + "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)),
                                 row[-1]]).rstrip() for row in cells]
    if header:
        last = min(max(len(r[-1]) for r in cells), 40)
        lines.insert(1, indent + "  ".join("-" * w for w in [*widths, last]))
    return lines


def table(report: dict[str, Any]) -> str:
    """One tenant's report for a terminal (`a2a-gateway migration report TENANT`)."""
    if "arms" not in report:  # a migration in mode `off`: nothing counted
        return summary(report) + "\n"
    shadow, rollback = _dict(report.get("shadow")), _dict(report.get("rollback"))
    lines = [summary(report),
             *_columns([["primary", _label(report, "primary")],
                        ["candidate", _label(report, "candidate")]]),
             "", "calls", *_columns(_arm_rows(report), _ARM_HEADER),
             "", f"shadow: {_shadow_line(shadow)}"]
    kinds = _kind_rows(shadow)
    lines += _columns(kinds, _KIND_HEADER) if kinds else ["  no kind of difference above "
                                                          "the noise"]
    lines += ["", f"rollback: {_rollback_state(rollback)}, {_rollback_rule(rollback)}"
              if rollback else "rollback: none reported"]
    events = [_dict(e) for e in _list(report.get("events"))]
    lines.append("")
    if events:
        lines.append(f"events, newest first ({min(len(events), TABLE_EVENTS)} of "
                     f"{len(events)})")
        lines += _columns([_event_row(e) for e in events[:TABLE_EVENTS]], _EVENT_HEADER)
    else:
        lines.append("events: none yet")
    disagreements = [_dict(d) for d in _list(report.get("disagreements"))]
    lines += ["", f"disagreements, newest first ({len(disagreements)})" if disagreements
              else "disagreements: none kept"]
    for d in disagreements:
        lines.append("  " + _disagreement_line(d))
        lines += _columns([[k, p, f"{a} → {b}"] for k, p, a, b in
                           (_diff_row(_dict(x)) for x in _list(d.get("differences")))],
                          indent="      ")
        if _not_shown(d):
            lines.append(f"      and {_not_shown(d)} more differences, not kept")
    return "\n".join(lines) + "\n"


def tenants_table(listing: dict[str, Any]) -> str:
    """The tenants in migration (`a2a-gateway migration report` without a tenant)."""
    rows = [[_text(r.get("tenant")), _text(r.get("mode")),
             f"{_pct(r.get('share'))} ({_pct(r.get('configured_share'))})",
             f"{_label(r, 'primary')} → {_label(r, 'candidate')}",
             _pct(_dict(r.get("shadow")).get("agreement_rate")),
             _rollback_state(_dict(r.get("rollback")))]
            for r in map(_dict, _list(listing.get("tenants")))]
    if not rows:
        return "no tenant has a migration block\n"
    return "\n".join(_columns(rows, ("tenant", "mode", "share (configured)",
                                     "primary → candidate", "agreed", "rollback"), "")) + "\n"


# The web pages.

def _h(value: Any) -> str:
    """Text from the report, for HTML (_text again on what went through it already
    changes nothing: it leaves no hidden character)."""
    return html.escape(_text(value), quote=True)


def _html_table(rows: Sequence[Sequence[str]], header: Sequence[str], cls: str = "") -> str:
    """A table of plain-text cells (each escaped here)."""
    head = "".join(f"<th>{_h(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{_h(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    klass = f' class="{cls}"' if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _document(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_h(title)}</title><style>{STYLE}</style></head>\n"
            f"<body>\n{body}\n</body></html>\n")


def _page_link(tenant: str) -> str:
    # Relative to /…/migration/page: the tenant's page is /…/migration/{tenant}/page.
    return html.escape(quote(tenant, safe="", errors="backslashreplace") + "/page",
                       quote=True)


def _side(title: str, d: dict[str, Any], key: str) -> str:
    # _json_block made its hidden characters visible but for its own line breaks.
    shown = _json_block(d[key]) if key in d else "(not kept)"
    return f"<div><h4>{_h(title)}</h4><pre>{html.escape(shown, quote=True)}</pre></div>"


def _not_shown(d: dict[str, Any]) -> int:
    more = d.get("differences_not_shown")
    return more if isinstance(more, int) and not isinstance(more, bool) and more > 0 else 0


def _disagreement_html(index: int, d: dict[str, Any]) -> str:
    diffs = [_diff_row(_dict(x), None) for x in _list(d.get("differences"))]
    more = (f"<p>and {_not_shown(d)} more differences, not kept</p>" if _not_shown(d)
            else "")
    return (f"<section class=\"dis\" id=\"d{index}\"><h3>{_h(_disagreement_line(d))}</h3>"
            + (_html_table(diffs, _DIFF_HEADER, "diffs") if diffs else
               "<p>no difference listed</p>") + more
            + "<div class=\"sides\">" + _side("request", d, "request")
            + _side("primary answer", d, "primary")
            + _side("candidate answer", d, "candidate") + "</div></section>")


def page(report: dict[str, Any]) -> str:
    """One tenant's report as a self-contained HTML page (GET …/migration/{tenant}/page)."""
    tenant = _text(report.get("tenant"))
    shadow, rollback = _dict(report.get("shadow")), _dict(report.get("rollback"))
    state = _rollback_state(rollback)
    kinds = _kind_rows(shadow)
    events = [_event_row(_dict(e)) for e in _list(report.get("events"))]
    disagreements = [_dict(d) for d in _list(report.get("disagreements"))]
    body = [
        "<p class=\"nav\"><a href=\"../page\">all tenants in migration</a></p>",
        f"<h1>Migration: {_h(tenant)} <span class=\"mode\">{_h(report.get('mode'))}</span>"
        "</h1>",
        f"<p>Now {_h(_headline(report))}.</p>",
        _html_table([["primary", _label(report, "primary")],
                     ["candidate", _label(report, "candidate")]], ("arm", "agent")),
        "<h2>Calls</h2>", _html_table(_arm_rows(report), _ARM_HEADER),
        "<h2>Shadow comparisons</h2>", f"<p>{_h(_shadow_line(shadow))}.</p>",
        _html_table(kinds, _KIND_HEADER) if kinds else
        "<p>No kind of difference above the noise.</p>",
        "<h2>Rollback</h2>",
        f"<p><strong class=\"{'bad' if rollback.get('rolled_back') else 'ok'}\">{_h(state)}"
        f"</strong>: {_h(_rollback_rule(rollback))}.</p>" if rollback else
        "<p>None reported.</p>",
        "<h2>Events</h2>",
        _html_table(events, _EVENT_HEADER) if events else "<p>None yet.</p>",
        f"<h2>Disagreements <small>(the last {len(disagreements)}, newest first; "
        "<code>?last=N</code> shows more)</small></h2>",
        *(_disagreement_html(i, d) for i, d in enumerate(disagreements, 1)),
        "" if disagreements else "<p>None kept.</p>",
    ]
    return _document(f"Migration: {tenant}", "\n".join(body))


def index_page(tenants: dict[str, Any]) -> str:
    """The tenants in migration (GET …/migration/page), each linking to its page;
    ``tenants``: the JSON of GET …/migration."""
    rows = []
    for r in map(_dict, _list(tenants.get("tenants"))):
        name, raw = _text(r.get("tenant")), str(r.get("tenant", ""))
        arms = _dict(r.get("arms"))
        candidate = _dict(arms.get("candidate"))
        cells = [_label(r, "primary") + " → " + _label(r, "candidate"), _text(r.get("mode")),
                 f"{_pct(r.get('share'))} ({_pct(r.get('configured_share'))})",
                 f"{_text(candidate.get('calls', 0))} / {_text(candidate.get('errors', 0))}",
                 _pct(_dict(r.get("shadow")).get("agreement_rate")),
                 _rollback_state(_dict(r.get("rollback")))]
        rows.append(f"<tr><td><a href=\"{_page_link(raw)}\">{_h(name)}</a></td>"
                    + "".join(f"<td>{_h(c)}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{c}</th>" for c in (
        "tenant", "primary → candidate", "mode", "share (configured)",
        "candidate calls / errors", "agreed", "rollback"))
    body = ("<h1>Migration</h1>" + (
        f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        if rows else "<p>No tenant has a migration block.</p>"))
    return _document("Migration", body)
