"""The manifests and model cards ship inside the wheel and are found through importlib.resources there."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_installed_wheel_finds_the_shipped_manifests(tmp_path: Path) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, source / name)
    (source / "README.md").touch()
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in ("leaf_cli", "models", "training"):
        shutil.copytree(ROOT / folder, source / folder, symlinks=True, ignore=ignore)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = next((tmp_path / "dist").glob("leaf_agent-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for model in ("frognano-4b", "qwen3.5-4b", "smollm2-135m"):
        assert f"leaf_cli/models/manifests/{model}.toml" in names
        assert f"leaf_cli/models/manifests/{model}.md" in names, \
            'pyproject.toml: [tool.setuptools.package-data] leaf_cli needs "models/manifests/*.md"'
    assert "leaf_train/prompts/generate_task.v1.md" in names  # TaskPilot's llm generator needs its prompts

    # "Install" it: unpack into a folder and import leaf from there only. -S keeps the editable install's
    # .pth finder out; site-packages stays on the path (after the wheel) for pydantic and friends.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = ("import json, leaf_cli; from leaf_cli.models.registry import builtin_manifests, card_text; "
            "m = builtin_manifests(); print(json.dumps([leaf_cli.__file__, sorted(m), "
            "all(card_text(x) for x in m.values())]))")
    env = {"PYTHONPATH": f"{site}:{sysconfig.get_paths()['purelib']}", "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, env=env, timeout=60,
                         cwd=tmp_path)  # not the checkout: `-c` puts the working folder first on sys.path
    assert run.returncode == 0, run.stderr[-2000:]
    location, found, cards = json.loads(run.stdout)
    assert location.startswith(str(site))
    assert found == ["frognano-4b", "qwen3.5-4b", "smollm2-135m"] and cards is True
