"""The package installs into a fresh venv and every module of leaf_cli and leaf_train imports with exactly
the distributions its metadata declares (base + one extra at a time), so an undeclared runtime import fails.

Lean on purpose (2 shared cores, no network): the venv is created without system site-packages; the wheel
of this checkout is built once and installed into it with --no-deps; the declared requirements' closure
(resolved from the installed distributions' own metadata, markers and extras evaluated) is made visible
by symlinking exactly those distributions' top-level files into one folder on the venv's path. What it
proves: every import the code performs is covered by a declared requirement, at the versions installed
here. What it does not: that pip would resolve the same versions from PyPI.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMPORT_ALL = r"""
import importlib, pkgutil, sys, traceback
bad = []
for top in sys.argv[1:]:
    pkg = importlib.import_module(top)
    for info in pkgutil.walk_packages(pkg.__path__, top + "."):
        if info.name.endswith("__main__") or ".probe." in info.name:
            continue
        try:
            importlib.import_module(info.name)
        except Exception as exc:
            bad.append(f"{info.name}: {type(exc).__name__}: {exc}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
"""


def _requirements(extra: str | None) -> list[str]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"]) + (list(project["optional-dependencies"][extra]) if extra else [])


def _closure(requirements: list[str]) -> set[str]:
    """Normalised names of the distributions the requirements pull in, transitively (installed metadata)."""
    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        key = f"{name}[{','.join(sorted(req.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            pytest.skip(f"{req.name} is not installed here, so the closure cannot be checked")
        for sub in dist.requires or []:
            r = Requirement(sub)
            for want in req.extras or {""}:
                todo.append((r, want))
    return {k.split("[")[0] for k in seen}


def _stage(names: set[str], dest: Path) -> None:
    """Symlink every top-level file or folder the distributions installed (their dist-info included)."""
    dest.mkdir()
    for name in names:
        dist = md.distribution(name)
        base = Path(str(dist.locate_file("")))
        for f in dist.files or []:
            top = f.parts[0]
            if top in ("..", "__pycache__") or top.endswith(".pth") or f.parts[0] == "bin":
                continue
            src, link = base / top, dest / top
            if src.exists() and not link.exists():
                link.symlink_to(src)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(ROOT)], check=True, timeout=600, capture_output=True)
    return next(out.glob("leaf_agent-*.whl"))


@pytest.mark.slow
@pytest.mark.parametrize("extra", ["train", "server"])
def test_every_module_imports_with_the_declared_distributions(extra: str, wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME") and not k.startswith("PIP_")}
    subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "--force-reinstall", "-q", str(wheel)],
                   check=True, timeout=300, capture_output=True, env=env)
    assert list((venv / "lib").glob("python*/site-packages/leaf_cli/__init__.py")), "the wheel did not install"
    deps = _closure(_requirements(extra)) - {"leaf-agent"}
    _stage(deps, tmp_path / "deps")
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "declared-deps.pth").write_text(str(tmp_path / "deps") + "\n")
    tops = ["leaf_cli", "leaf_train"] if extra == "train" else ["leaf_cli"]
    run = subprocess.run([str(py), "-c", IMPORT_ALL, *tops], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, f"undeclared imports with [{extra}]:\n{run.stdout}{run.stderr[-2000:]}"
