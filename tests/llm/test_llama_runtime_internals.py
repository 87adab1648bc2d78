"""llama-cpp-python's private internals behind one file: each exists on the installed version and does what
leaf uses it for (checked on a loaded SmolLM2), one taken away fails loudly with the version and the attribute
named (at load, at the call, and as one line from `leaf fix`), and no module but
`leaf_cli/llm/llama_runtime.py` reaches one."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from leaf_cli.errors import InfraError, exit_code
from leaf_cli.llm.llama_runtime import (INTERNALS, LlamaInternalsError, decode_batch, kv_seq_rm, load_llama,
                                        missing_internals, vocab_handle)

if TYPE_CHECKING:
    from llama_cpp import Llama

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "leaf_cli" / "llm" / "llama_runtime.py"
KNOWN_PRIVATE = frozenset({"_ctx", "_model", "_batch"})
"""The private `Llama` attributes leaf reaches, for a checkout without llama-cpp-python installed."""


@pytest.fixture(scope="module")
def llm(smollm2_path: Path) -> Llama:
    loaded, _ = load_llama(smollm2_path, n_ctx=256, n_threads=1)
    return loaded


def installed_version() -> str:
    """Read apart from `llama_runtime.llama_cpp_version`, so a wrong version there cannot pass."""
    return importlib.metadata.version("llama-cpp-python")


def take_away(monkeypatch: pytest.MonkeyPatch, llm: Llama, path: str) -> None:
    """Remove the last step of `path` the way an upgrade would: from the object, or from its class."""
    *owners, name = path.split(".")
    owner: object = llm
    for step in owners:
        owner = getattr(owner, step)
    assert hasattr(owner, name), f"{path} is not there to take away"
    monkeypatch.delattr(owner if name in vars(owner) else type(owner), name)
    assert not hasattr(owner, name)  # the mutation took effect


@pytest.mark.llama
def test_every_internal_exists_on_the_installed_llama_cpp_python(llm: Llama) -> None:
    assert missing_internals(llm) == [], f"llama-cpp-python {installed_version()}"
    assert vocab_handle(llm) and vocab_handle(llm) == llm._model.vocab
    assert llm.model == llm._model.model  # lib_is_hybrid reads the public property: it is the same pointer


@pytest.mark.llama
def test_the_wrappers_do_what_leaf_uses_them_for(llm: Llama) -> None:
    from llama_cpp import llama_cpp as lib

    assert lib.llama_vocab_is_eog(vocab_handle(llm), llm.token_eos())
    assert not lib.llama_vocab_is_eog(vocab_handle(llm), llm.tokenize(b"hello", add_bos=False)[0])
    tokens = llm.tokenize(b"The capital of France is", add_bos=False)
    llm.reset()
    assert kv_seq_rm(llm, 0)
    decode_batch(llm, tokens, 0)
    every = np.ctypeslib.as_array(lib.llama_get_logits(llm.ctx), shape=(len(tokens), llm.n_vocab())).copy()
    assert np.isfinite(every).all() and not np.allclose(every[0], every[-1])  # a row per position
    assert kv_seq_rm(llm, 2)  # an attention cache cuts anywhere
    decode_batch(llm, tokens[2:], 2)  # and what was cut decodes again at the same positions, to the same rows
    again = np.ctypeslib.as_array(lib.llama_get_logits(llm.ctx), shape=(len(tokens) - 2, llm.n_vocab()))
    assert np.allclose(again, every[2:], atol=1e-3)
    llm.reset()
    llm.eval(tokens)  # what plain evaluation gives for the last position
    last = np.ctypeslib.as_array(lib.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
    assert int(np.argmax(last)) == int(np.argmax(every[-1]))


CALLS: dict[str, Callable[[Llama], object]] = {
    "_ctx.kv_cache_seq_rm": lambda llm: kv_seq_rm(llm, 0),
    "_ctx.decode": lambda llm: decode_batch(llm, [1], 0),
    "_batch.set_batch": lambda llm: decode_batch(llm, [1], 0),
    "_model.vocab": vocab_handle,
}
"""A call that reaches each internal."""


def test_every_internal_has_a_call_below() -> None:
    assert set(CALLS) == set(INTERNALS)


@pytest.mark.llama
@pytest.mark.parametrize("path", INTERNALS)
def test_a_missing_internal_names_the_version_and_the_attribute(llm: Llama, path: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    take_away(monkeypatch, llm, path)
    assert missing_internals(llm) == [path]
    with pytest.raises(LlamaInternalsError) as caught:
        CALLS[path](llm)
    message = str(caught.value)
    assert message.startswith(f"llama-cpp-python {installed_version()} has no Llama.{path}, which leaf relies on")
    assert "\n" not in message and "leaf_cli/llm/llama_runtime.py" in message  # one line, and where to adapt
    assert isinstance(caught.value, InfraError) and caught.value.kind == "llama_cpp" and exit_code(caught.value) == 1


@pytest.mark.llama
def test_a_missing_internal_fails_at_load(smollm2_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_cpp import _internals

    monkeypatch.delattr(_internals.LlamaContext, "kv_cache_seq_rm")
    monkeypatch.delattr(_internals.LlamaBatch, "set_batch")
    with pytest.raises(LlamaInternalsError) as caught:
        load_llama(smollm2_path, n_ctx=256, n_threads=1)
    assert str(caught.value).startswith(f"llama-cpp-python {installed_version()} has no "
                                         "Llama._ctx.kv_cache_seq_rm, Llama._batch.set_batch, which leaf relies on")


CLI_WITHOUT_INTERNAL = """
import sys
from llama_cpp import _internals
del _internals.LlamaContext.kv_cache_seq_rm
from leaf_cli.cli.main import run
sys.argv = ["leaf", *sys.argv[1:]]
run()
"""


@pytest.mark.llama
def test_leaf_fix_says_it_in_one_line_and_leaves_the_repo_alone(git_repo: Path, smollm2_path: Path,
                                                                 tmp_path: Path) -> None:
    """What a user sees after an upgrade that dropped an internal: `leaf fix` as its own process."""
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=git_repo, capture_output=True,
                            text=True, check=True).stdout
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", CLI_WITHOUT_INTERNAL, "fix", "--model", str(smollm2_path),
                           "add two numbers correctly"], cwd=git_repo, env=env, capture_output=True, text=True,
                          timeout=300)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"llama-cpp-python {installed_version()} has no Llama._ctx.kv_cache_seq_rm" in lines[0]
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=git_repo, capture_output=True,
                           text=True, check=True).stdout
    assert after == before  # nothing written into the repository


def reached_paths() -> set[str]:
    """Every literal path `llama_runtime._reach` is called with."""
    paths = set()
    for node in ast.walk(ast.parse(RUNTIME.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_reach":
            if isinstance(node.args[1], ast.Constant):  # the one computed path is `missing_internals`' loop
                paths.add(node.args[1].value)
    return paths


def test_internals_lists_every_path_the_wrappers_follow() -> None:
    reached = reached_paths()
    prefixes = {path.rsplit(".", 1)[0] for path in INTERNALS}
    assert reached >= set(INTERNALS), "INTERNALS names a path no wrapper follows"
    assert reached - prefixes <= set(INTERNALS), "a wrapper follows a path INTERNALS (and so the check) omits"


def llama_private_names() -> frozenset[str]:
    """The private attributes a `Llama` sets or defines (read from the installed llama_cpp/llama.py)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return KNOWN_PRIVATE
    tree = ast.parse((Path(spec.origin).parent / "llama.py").read_text(encoding="utf-8"))
    names = set(KNOWN_PRIVATE)
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "Llama"):
        for n in ast.walk(cls):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
                names.add(n.attr)
            elif isinstance(n, ast.FunctionDef):
                names.add(n.name)
    return frozenset(n for n in names if n.startswith("_") and not n.startswith("__"))


def private_reaches(path: Path, private: frozenset[str]) -> Iterator[str]:
    """`path:line: expression` for each private llama-cpp-python attribute or module the file reaches."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        where = f"{path}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute) and node.attr in private:
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):  # a leaf class's own field
                yield f"{where}: {ast.unparse(node)}"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llama_cpp"):
            modules = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            if any(part.startswith("_") for m in modules for part in m.split(".")[1:]):
                yield f"{where}: from {node.module} import {', '.join(a.name for a in node.names)}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("llama_cpp.") and any(p.startswith("_") for p in alias.name.split(".")[1:]):
                    yield f"{where}: import {alias.name}"


def scan(root: Path, private: frozenset[str]) -> list[str]:
    files = sorted(p for sub in ("leaf_cli", "training") for p in (root / sub).rglob("*.py"))
    return [hit for f in files if f.resolve() != RUNTIME for hit in private_reaches(f, private)]


def test_only_llama_runtime_reaches_llama_cpp_python_internals() -> None:
    hits = scan(ROOT, llama_private_names())
    assert not hits, "private llama-cpp-python internals outside llama_runtime.py (wrap them there):\n" + "\n".join(hits)


def test_the_scan_sees_a_private_reach(tmp_path: Path) -> None:
    bad = tmp_path / "leaf_cli" / "llm" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("def f(llm, engine):\n    llm._ctx.decode(llm._batch)\n    return engine.llm._model.vocab\n"
                   "from llama_cpp import _internals\nimport llama_cpp._internals\n"
                   "class C:\n    def g(self):\n        return self._model\n", encoding="utf-8")
    hits = [h.split(": ", 1)[1] for h in private_reaches(bad, llama_private_names())]
    assert sorted(hits) == sorted(["llm._ctx", "llm._batch", "engine.llm._model", "from llama_cpp import _internals",
                                   "import llama_cpp._internals"])
