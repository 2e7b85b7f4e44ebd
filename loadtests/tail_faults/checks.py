"""Issue 32's targets for the tail-fault benchmark, met or missed (pure).

- stalls: the gateway's (recovery on) TTFT p99 at most ``P99_FACTOR`` x its no-fault p99
  plus ``P99_SLACK_MS``; its extra upstream requests at most ``MAX_EXTRA`` of the requests it
  passed on.
- deaths: at least ``MIN_INTACT`` of the gateway's streams intact, none that looks complete
  and is not.
- saturation: recovery adds no load (the extra upstream share with recovery on at most
  ``SAME_LOAD`` above the one with it off) and the admission figures do not move (goodput
  and shed share within ``SAME_ADMISSION`` of each other, absolute).
- baseline: every stream of every target intact in the no-fault run (this checks the
  benchmark itself: the expected text is right and nothing alters answers).

A check whose inputs are missing (a target that did not start, a scenario not run) is "not
measured", never met.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

P99_FACTOR = 1.5
P99_SLACK_MS = 100.0
MAX_EXTRA = 0.08
MIN_INTACT = 0.97
SAME_LOAD = 0.01
SAME_ADMISSION = 0.05

Rows = Mapping[str, Mapping[str, Mapping[str, Any]]]  # scenario -> target -> figures


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    target: str
    measured: str
    met: bool | None  # None: not measured

    def verdict(self) -> str:
        return "not measured" if self.met is None else ("met" if self.met else "MISSED")


def _row(rows: Rows, scenario: str, target: str) -> Mapping[str, Any] | None:
    row = rows.get(scenario, {}).get(target)
    return row if row and row.get("status") is None else None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def stall_checks(rows: Rows) -> list[Check]:
    on, base = _row(rows, "stalls", "gateway"), _row(rows, "nofault", "gateway")
    want = f"<= {P99_FACTOR:g} x no-fault p99 + {P99_SLACK_MS:g} ms"
    if on is None or base is None or on["ttft_p99_ms"] is None or base["ttft_p99_ms"] is None:
        p99 = Check("stalls: gateway TTFT p99", want, "-", None)
    else:
        limit = P99_FACTOR * base["ttft_p99_ms"] + P99_SLACK_MS
        p99 = Check("stalls: gateway TTFT p99", want,
                    f"{on['ttft_p99_ms']:,.0f} ms (limit {limit:,.0f} ms)",
                    on["ttft_p99_ms"] <= limit)  # fmt: skip
    extra = None if on is None else on["extra_share"]
    more = Check("stalls: gateway extra upstream requests", f"<= {MAX_EXTRA:.0%}", _pct(extra),
                 None if extra is None else extra <= MAX_EXTRA)  # fmt: skip
    return [p99, more]


def death_checks(rows: Rows) -> list[Check]:
    on = _row(rows, "deaths", "gateway")
    share = None if on is None else on["intact_share"]
    intact = Check("deaths: gateway streams intact", f">= {MIN_INTACT:.0%}",
                   "-" if on is None else f"{on['intact']}/{on['requests']} ({_pct(share)})",
                   None if share is None else share >= MIN_INTACT)  # fmt: skip
    fake = None if on is None else on["looks_complete_not"]
    clean = Check("deaths: gateway streams that look complete and are not", "0",
                  "-" if fake is None else str(fake),
                  None if fake is None else fake == 0)  # fmt: skip
    return [intact, clean]


def saturation_checks(rows: Rows) -> list[Check]:
    on, off = _row(rows, "saturation", "gateway"), _row(rows, "saturation", "gateway-off")
    if on is None or off is None or on["extra_share"] is None or off["extra_share"] is None:
        return [Check("saturation: recovery adds no load", f"extra share on <= off + "
                      f"{SAME_LOAD:.0%}", "-", None),
                Check("saturation: admission figures do not move",
                      f"goodput and shed within {SAME_ADMISSION:.0%}", "-", None)]  # fmt: skip
    load = Check("saturation: recovery adds no load", f"extra share on <= off + {SAME_LOAD:.0%}",
                 f"on {_pct(on['extra_share'])}, off {_pct(off['extra_share'])}",
                 on["extra_share"] <= off["extra_share"] + SAME_LOAD)  # fmt: skip
    moved = max(abs(on["goodput"] - off["goodput"]), abs(on["shed"] - off["shed"]))
    admission = Check("saturation: admission figures do not move",
                      f"goodput and shed within {SAME_ADMISSION:.0%}",
                      f"goodput {_pct(on['goodput'])} vs {_pct(off['goodput'])}, shed "
                      f"{_pct(on['shed'])} vs {_pct(off['shed'])}",
                      moved <= SAME_ADMISSION)  # fmt: skip
    return [load, admission]


def baseline_checks(rows: Rows) -> list[Check]:
    out = []
    for target, row in rows.get("nofault", {}).items():
        if row.get("status") is not None:
            continue
        out.append(Check(f"no faults: {target} streams intact", "all",
                         f"{row['intact']}/{row['requests']}",
                         row["intact"] == row["requests"]))  # fmt: skip
    return out


def all_checks(rows: Rows) -> list[Check]:
    found = baseline_checks(rows)
    if "stalls" in rows:
        found += stall_checks(rows)
    if "deaths" in rows:
        found += death_checks(rows)
    if "saturation" in rows:
        found += saturation_checks(rows)
    return found
