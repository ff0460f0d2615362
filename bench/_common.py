"""What every bench prints the same way: the machine's load, rounds as min / median / max,
what is compared, and a process's CPU time.

    from _common import Figures, banner, process_cpu
    banner("engine", "coze_lab's engine vs LangGraph on the same graph")
    figures = Figures(rounds=3)
    figures.add("per node, ms", [0.21, 0.23, 0.22])
    figures.print()
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from pathlib import Path

ROUNDS = int(os.environ.get("COZE_LAB_BENCH_ROUNDS", "3"))


def load_average() -> str:
    """``load 1.23 / 0.98 / 0.70 (1/5/15 min), 2 cores``."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min), {os.cpu_count()} cores"


def banner(title: str, compares: str) -> None:
    """The bench's first lines: its name, what it compares, the load at the start."""
    print(f"== {title}")
    print(f"compares: {compares}")
    print(f"at start: {load_average()}", flush=True)


def spread(values: Sequence[float], digits: int = 2) -> str:
    """``min / median / max`` of the rounds.

    >>> spread([3.0, 1.0, 2.0])
    '1.00 / 2.00 / 3.00'
    """
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{low:.{digits}f} / {mid:.{digits}f} / {high:.{digits}f}"


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile by rank (no interpolation)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Figures:
    """Rows of ``name  min / median / max unit`` over the rounds, printed as one table."""

    def __init__(self, rounds: int = ROUNDS) -> None:
        self.rounds = rounds
        self.rows: list[tuple[str, str]] = []

    def add(self, name: str, values: Sequence[float], unit: str = "", digits: int = 2) -> None:
        self.rows.append((name, f"{spread(values, digits)} {unit}".rstrip()))

    def note(self, name: str, text: str) -> None:
        self.rows.append((name, text))

    def print(self) -> None:
        rounds = f"{self.rounds} rounds: min / median / max"
        width = max(len(name) for name, _ in [*self.rows, (rounds, "")])
        print(f"{rounds:<{width}}")
        for name, value in self.rows:
            print(f"{name:<{width}}  {value}")
        print(f"at end:   {load_average()}", flush=True)


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) a running process has used so far.

    Read from ``/proc/<pid>/stat``: the kernel's accounting, 10 ms ticks.
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    return ticks / os.sysconf("SC_CLK_TCK")
