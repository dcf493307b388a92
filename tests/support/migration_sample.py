"""A migration report in the shape docs/migration.md ("The report") gives and
gateway/migration/tenant.py makes, for the tests of what shows it (gateway/migration/render.py, the admin API, the CLI). Its candidate
answered with markup and a terminal escape: what an untrusted agent may send."""

from __future__ import annotations

import copy
from typing import Any

HOSTILE = "<script>alert(1)</script>\x1b[31m"

_REPORT: dict[str, Any] = {
    "tenant": "travel",
    "mode": "canary",
    "share": 0.3,
    "configured_share": 0.3,
    "primary": {"label": "JSONRPC/0.3"},
    "candidate": {"label": "JSONRPC/1.0"},
    "arms": {
        "primary": {"calls": 120, "errors": 0, "timeouts": 0, "fell_back": 0, "p50_ms": 3.1,
                    "p95_ms": 7.9},
        "candidate": {"calls": 52, "errors": 1, "timeouts": 2, "fell_back": 5, "p50_ms": 4.0,
                      "p95_ms": 9.2},
    },
    "shadow": {"compared": 200, "agreed": 197, "agreement_rate": 0.985, "skipped": 4,
               "failed": 1, "diffs_by_kind": {"text": 3}, "noise_by_kind": {"text": 0.005},
               "active": True, "operations": ["GetTask"], "aa": True},
    "rollback": {"enabled": True, "window_seconds": 60, "min_calls": 20,
                 "max_error_rate": 0.2, "max_timeout_rate": 0.25, "max_diff_rate": 0.5,
                 "rolled_back": False, "rolled_back_by": None, "candidate_calls": 17,
                 "comparisons": 30},
    "events": [
        {"at": "2026-12-05T13:00:00Z", "kind": "rollback", "from_share": 0.3,
         "to_share": 0.0, "by": "automatic",
         "reason": "candidate error rate 0.45 over 60 s (min 20 calls) > 0.2"},
        {"at": "2026-12-05T12:00:00Z", "kind": "promote", "from_share": 0.1,
         "to_share": 0.3, "by": "admin API (127.0.0.1)"},
    ],
    "disagreements": [
        {"at": "2026-12-05T13:00:01Z", "operation": "SendMessage", "request_id": "ab12cd",
         "request": {"message": {"role": "user", "parts": [{"text": "hi"}]}},
         "primary": {"artifacts": [{"parts": [{"text": "Echo: hi"}]}]},
         "candidate": {"artifacts": [{"parts": [{"text": HOSTILE}]}]},
         "primary_ms": 3.2, "candidate_ms": 4.1,
         "differences": [{"kind": "text", "path": "artifacts[0].parts[0].text",
                          "primary": "Echo: hi", "candidate": HOSTILE}]},
        {"at": "2026-12-05T12:59:00Z", "operation": "GetTask", "request_id": "ef34",
         "request": {"id": "task-1"}, "primary": {"status": {"state": "completed"}},
         "candidate": {"status": {"state": "failed"}}, "primary_ms": 1.0,
         "candidate_ms": 1.5,
         "differences": [{"kind": "state", "path": "status.state",
                          "primary": "completed", "candidate": "failed"}]},
    ],
}


def sample_report(**changes: Any) -> dict[str, Any]:
    """A fresh copy of the sample, with top-level fields replaced."""
    return {**copy.deepcopy(_REPORT), **changes}


def listed(report: dict[str, Any]) -> dict[str, Any]:
    """The report as GET /_admin/migration lists it: without events and disagreements."""
    return {k: v for k, v in report.items() if k not in ("events", "disagreements")}
