"""``--cpu-report``: the CPU-seconds each test module and test took, at the end of the run.

The machine's wall time says little when other jobs share its cores; CPU-seconds say what a
test costs (docs/authors/testing.md, "How long the suite takes"). Per test: the test
process's user + system time, and its children's (exports, CLIs, servers) as they are
waited for; a session-wide server is charged to the test that ends it, and what no test
holds (collection, session fixtures) is listed as such. Run in one process:

    python -m pytest -q -m "not browser" --numprocesses=0 --cpu-report
"""

from __future__ import annotations

import os
from collections import defaultdict

import pytest


def _cpu(t: os.times_result) -> tuple[float, float]:
    return t.user + t.system, t.children_user + t.children_system


class CpuReport:
    def __init__(self, top: int = 25):
        self.top = top
        self.start = _cpu(os.times())
        self.tests: dict[str, tuple[float, float]] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        before = _cpu(os.times())
        yield
        after = _cpu(os.times())
        own, kids = (after[0] - before[0], after[1] - before[1])
        prev = self.tests.get(item.nodeid, (0.0, 0.0))
        self.tests[item.nodeid] = (prev[0] + own, prev[1] + kids)

    def pytest_terminal_summary(self, terminalreporter):
        end = _cpu(os.times())
        total = (end[0] - self.start[0]) + (end[1] - self.start[1])
        modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
        for nodeid, (own, kids) in self.tests.items():
            m = modules[nodeid.split("::")[0]]
            m[0] += own
            m[1] += kids
            m[2] += 1
        tested = sum(own + kids for own, kids in self.tests.values())
        write = terminalreporter.write_line
        terminalreporter.section("CPU-seconds (this process + its children)")
        write(f"{total:8.1f}  the run after start-up ({len(self.tests)} tests; {total - tested:.1f} "
              "outside any test: collection, session fixtures, children reaped at the end)")
        write(f"{'CPU-s':>8}  {'own':>7}  {'children':>8}  {'tests':>5}  module")
        for name, (own, kids, n) in sorted(modules.items(), key=lambda kv: -(kv[1][0] + kv[1][1])):
            write(f"{own + kids:8.1f}  {own:7.1f}  {kids:8.1f}  {n:5d}  {name}")
        write(f"\nthe {self.top} most expensive tests:")
        ranked = sorted(self.tests.items(), key=lambda kv: -sum(kv[1]))[:self.top]
        for nodeid, (own, kids) in ranked:
            write(f"{own + kids:8.1f}  {nodeid}")
