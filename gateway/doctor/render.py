"""The report as text for a terminal: plain aligned columns, one section per target."""

from __future__ import annotations

from collections.abc import Sequence

from gateway.doctor.report import ClientVerdict, Report, TargetReport

_WIDTH = 100


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    """Aligned columns; the last column is cut to keep lines readable."""
    cells = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header) - 1)]
    out = []
    for index, row in enumerate(cells):
        head = "  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=False))
        room = max(30, _WIDTH - len(head))
        last = row[-1] if len(row[-1]) <= room else row[-1][:room - 3] + "..."
        out.append(f"  {head}  {last}".rstrip())
        if index == 0:
            out.append("  " + "-" * min(_WIDTH, len(head) + 2 + len(last)))
    return out


def _client_lines(verdict: ClientVerdict) -> list[str]:
    name = f"{verdict.binding} {verdict.version}"
    lines = [f"  {name:<15} {verdict.verdict:<16} {verdict.backend or '-'}"]
    for r in verdict.refused:
        lines.append(f"      refused  {r.operation}: {r.reason}"[:_WIDTH + 20])
    for r in verdict.failing:
        lines.append(f"      fails    {r.operation} at the backend: {r.reason}"[:_WIDTH + 20])
    for loss in verdict.lost:
        lines.append(f"      loses    {loss.operation}: {', '.join(loss.fields)} "
                     f"({loss.effect})"[:_WIDTH + 20])
    return lines


def render_target(t: TargetReport) -> list[str]:
    lines = [f"== {t.name}" + (f"  ({t.target})" if t.target != t.name else "")]
    card = t.card
    if card.found:
        caps = ", ".join(k for k, v in card.capabilities.items() if v) or "none"
        version = f", protocolVersion {card.protocol_version}" if card.protocol_version else ""
        lines.append(f"card: {card.url}  [{card.shape} card{version}] {card.name!r}; "
                     f"capabilities: {caps}")
    else:
        lines.append(f"card: none ({card.error})")
    lines.append("")
    lines.append("interfaces:")
    lines += table([[f"{i.advertised_binding} {i.advertised_version}".strip() or "?",
                     i.url, ", ".join(i.answered) or "-", i.agreement + (
                         f": {i.note}" if i.note else "")] for i in t.interfaces],
                   ["advertised", "url", "answered as", "verdict"])
    for i in t.interfaces:
        lines.append("")
        lines.append(f"operations at {i.url} ({', '.join(i.answered) or 'no answer'}):")
        lines += table([[o.operation, o.status, o.detail] for o in i.operations],
                       ["operation", "result", "detail"])
    lines.append("")
    lines.append(f"gateway in front of it: uses {t.gateway_uses or 'nothing'}")
    lines += [line for v in t.clients for line in _client_lines(v)]
    lines.append("")
    lines.append("seed scenarios:")
    lines += table([[s.id, s.result, s.why] for s in t.seeds], ["id", "result", "why"])
    lines.append("")
    if t.servable:
        lines.append("servable: yes")
    else:
        lines.append("servable: NO")
    lines += [f"  problem: {p}" for p in t.problems]
    return lines


def render(report: Report) -> str:
    lines: list[str] = []
    if report.through_gateway:
        lines.append(f"through the gateway at {report.through_gateway}")
    lines.append(f"loss policy: {report.loss_policy}; "
                 f"{'real calls sent (--send)' if report.sent else 'safe probes only'}")
    for t in report.targets:
        lines.append("")
        lines += render_target(t)
    return "\n".join(lines) + "\n"
