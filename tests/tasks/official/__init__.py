"""The official harnesses' own code, installed from PyPI for the parity tests only (never shipped, never
copied into leaf): swebench 5.0.2 (log parsers, grading, its apply ladder), swebench 4.1.0 (the per-repo
spec table and `make_eval_script_list_py` that v5's eval scripts were generated with), harbor 0.25.0
(its task.toml schema; it needs Python >= 3.12, so its wheel is unpacked and only the pure-pydantic config
module is imported) and verl 0.9.1 (its PPO `core_algos`, for the DPPO losses: tests/training/rl/test_verl_parity.py).

Each is installed once with `pip install --no-deps --target` into a cache folder; their heavy package
`__init__`s (docker, datasets, modal) are bypassed by loading the needed submodules under stub parent
packages. Where PyPI cannot be reached the parity tests skip, saying so.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
import types
from pathlib import Path
from types import ModuleType

import pytest

REFS: dict[str, list[str]] = {
    "swebench-5.0.2": ["swebench==5.0.2", "unidiff==0.7.5"],
    "swebench-4.1.0": ["swebench==4.1.0", "unidiff==0.7.5"],
    "harbor-0.25.0": ["harbor==0.25.0", "toml==0.10.2", "pathspec==0.12.1"],
    "django-4.2.17": ["django==4.2.17", "asgiref==3.8.1", "sqlparse==0.5.3"],
    "verl-0.9.1": ["verl==0.9.1", "omegaconf==2.3.0", "antlr4-python3-runtime==4.9.3"],
}
ONLY_312 = {"harbor==0.25.0"}


def cache_dir() -> Path:
    base = os.environ.get("LEAF_OFFICIAL_REFS") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "leaf-tests" / "refs"
    return Path(base)


def site(name: str) -> Path:
    """The folder `name`'s packages were installed into; skips the test when pip cannot get them. One
    installer at a time per folder: the suite's xdist workers (and other sessions) share the cache."""
    from leaf_cli.tasks.envs.cache import locked

    target = cache_dir() / name
    with locked(target.with_name(name + ".lock")):
        return _install(name, target)


def _install(name: str, target: Path) -> Path:
    if (target / ".complete").is_file():
        return target
    target.mkdir(parents=True, exist_ok=True)
    for spec in REFS[name]:
        extra = ["--python-version", "3.12", "--only-binary=:all:"] if spec in ONLY_312 else []
        # pip refuses --target installs for another Python; a wheel is a zip, so download and unpack it.
        argv = ([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(target / "_wheels"), *extra, spec]
                if extra else [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), spec])
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            pytest.skip(f"pip timed out getting {spec} (the official code this test compares against)")
        if done.returncode != 0:
            pytest.skip(f"cannot install {spec} from PyPI here: {done.stderr.strip()[-200:]}")
        if extra:
            import zipfile

            for wheel in (target / "_wheels").glob("*.whl"):
                with zipfile.ZipFile(wheel) as archive:
                    archive.extractall(target)
    (target / ".complete").write_text("ok\n")
    return target


def load(name: str, hollow: tuple[str, ...], *modules: str, stubs: dict[str, dict] | None = None) -> list[ModuleType]:
    """Import `modules` from the installed copy `name`. The packages in `hollow` are made empty namespaces
    instead of running their `__init__` (which imports docker, datasets, modal). `stubs` stand in for
    third-party modules the official code imports but the compared functions never use."""
    root = site(name)
    package = hollow[0]
    for key in [k for k in sys.modules if k == package or k.startswith(package + ".")]:
        del sys.modules[key]  # two versions of one package are loaded one after the other
    for stub, attrs in (stubs or {}).items():
        if stub not in sys.modules:
            sys.modules[stub] = types.SimpleNamespace(**attrs)  # type: ignore[assignment]
    sys.path.insert(0, str(root))
    try:
        for parent in hollow:
            stub_pkg = ModuleType(parent)
            stub_pkg.__path__ = [str(root.joinpath(*parent.split(".")))]
            sys.modules[parent] = stub_pkg
        return [importlib.import_module(module) for module in modules]
    finally:
        sys.path.remove(str(root))


def constant(name: str, relpath: str, variable: str) -> object:
    """A literal assigned at module level in an official file that cannot be imported here (it needs the
    docker SDK at import time), read with `ast.literal_eval`."""
    tree = ast.parse((site(name) / relpath).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == variable for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{variable} not found in {relpath}")
