"""One rule for skips (a pytest plugin, loaded by tests/conftest.py): under CI a test may skip only for
what the machine cannot have, and every skip is counted by reason at the end of the run.

CI is `CI=true` or `LEAF_REQUIRE_LLAMA=1` (.ci/run sets the latter). There, a skip whose reason does not
start with one of the tags in `MACHINE` fails the test, at collection (a module's `importorskip`) as well as
at setup or in the test: a missing package, model, PyPI download or reference folder is a broken install,
never a reason to run less. A machine skip starts its reason with the tag (`pytest.skip("[no-docker] ...")`);
`gpu` tests skip, tagged, where torch sees no CUDA device; `network` tests skip, tagged, where what they
need from beyond the registries (a GitHub checkout) is absent.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest

MACHINE = {
    "[no-docker]": "no Docker daemon or CLI on this machine (or one is running where its absence is tested)",
    "[root]": "the test needs a non-root user (root reads every file and every process), or root",
    "[no-gpu]": "no CUDA GPU on this machine",
    "[no-internet]": "needs the internet beyond the package registries (a GitHub checkout), which CI cannot reach",
    "[platform]": "another operating system or CPU",
}


def strict() -> bool:
    """Whether skips outside `MACHINE` fail: under CI."""
    return os.environ.get("CI", "").lower() == "true" or os.environ.get("LEAF_REQUIRE_LLAMA") == "1"


def _reason(report: Any) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def _refuse(report: Any) -> None:
    """Turn a skip without a machine reason into a failure that says why."""
    if not report.skipped or hasattr(report, "wasxfail") or not strict():
        return
    reason = _reason(report)
    if reason.startswith(tuple(MACHINE)):
        return
    report.outcome = "failed"
    report.longrepr = (f"skipped under CI without a machine reason: {reason}\n(CI may skip only for "
                       f"{', '.join(MACHINE)}: tests/support/skips.py)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    _refuse(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    outcome = yield
    _refuse(outcome.get_result())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`gpu` tests skip, tagged, without CUDA (torch is imported only when such a test was collected)."""
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu and not _has_cuda():
        for item in gpu:
            item.add_marker(pytest.mark.skip(reason="[no-gpu] no CUDA device here (torch.cuda.is_available() is false)"))


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: Any) -> Any:
    """The skip count and reasons, after pytest's own summary (the outermost wrapper): what this run did
    not test, and why."""
    yield
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if not hasattr(r, "wasxfail")]
    if not skipped:
        return
    terminalreporter.section(f"{len(skipped)} skipped, by reason")
    for reason, count in sorted(Counter(_reason(r) for r in skipped).items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{count:5d}  {reason}")
