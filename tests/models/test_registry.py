"""The registry: user-added manifests beside the shipped ones, and where each model's file is."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.models.manifest import Manifest, Source
from leaf_cli.models.registry import (all_manifests, data_dir, delete_user_manifest, get_manifest, save_user_manifest,
                                      user_manifests)
from leaf_cli.models.store import locate, read_downloads, record_download, sha256_file


def local(name: str, path: Path) -> Manifest:
    return Manifest(name=name, chat_format="auto", context_length=4096, n_ctx=4096,
                    source=Source(kind="path", path=str(path)))


def test_data_dir_follows_leaf_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAF_HOME", str(tmp_path / "h"))
    assert data_dir() == tmp_path / "h" / "data"


def test_user_manifest_round_trip(make_gguf: Callable[..., Path]) -> None:
    path = make_gguf()
    saved = save_user_manifest(local("my-model", path))
    assert saved.parent == data_dir() / "models" and saved.name == "my-model.toml"
    again = get_manifest("my-model")
    assert again.source.path == str(path) and not again.builtin
    assert "my-model" in all_manifests() and "frognano-4b" in all_manifests()
    assert locate(again) == path
    delete_user_manifest("my-model")
    assert user_manifests() == {}


def test_names_cannot_collide(make_gguf: Callable[..., Path]) -> None:
    with pytest.raises(LeafError, match="'frognano-4b' already exists"):
        save_user_manifest(local("frognano-4b", make_gguf()))
    save_user_manifest(local("mine", make_gguf()))
    with pytest.raises(LeafError, match="'mine' already exists"):
        save_user_manifest(local("mine", make_gguf("other.gguf")))


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(LeafError, match=r"unknown model 'gpt-9'; known models: frognano-4b, qwen3.5-4b, smollm2-135m"):
        get_manifest("gpt-9")


def test_a_broken_user_manifest_is_reported_by_file(tmp_path: Path) -> None:
    folder = data_dir() / "models"
    folder.mkdir(parents=True)
    (folder / "oops.toml").write_text('name = "oops"\nchat_format = 3\n')
    with pytest.raises(LeafError, match=r"broken model manifest .*oops.toml: "):
        all_manifests()


def test_package_model_is_found_without_importing_the_package(smollm2_file: Path) -> None:
    assert locate(get_manifest("smollm2-135m")) == smollm2_file


def test_hub_models_count_only_after_a_verified_download(tmp_path: Path) -> None:
    frog = get_manifest("frognano-4b")
    assert locate(frog) is None
    blob = tmp_path / "frog.gguf"
    blob.write_bytes(b"GGUF" + bytes(100))
    record_download("frognano-4b", blob, sha256_file(blob), "hub")
    assert locate(frog) == blob and read_downloads()["frognano-4b"]["verified_by"] == "hub"
    blob.write_bytes(b"GGUF" + bytes(50))  # changed since it was verified
    assert locate(frog) is None


def test_toml_writer_round_trips_what_leaf_writes(tmp_path: Path) -> None:
    import tomllib

    from leaf_cli.models.toml_write import dumps, write_atomic

    data = {"qwen3.5-4b": {"path": 'C:\\models\\"odd" name\nü.gguf', "size_bytes": 2_700_000_000, "ok": True,
                           "ratio": 0.5, "tags": ["a", "b"], "nested": {"x": 1}}, "top": "level"}
    path = tmp_path / "r.toml"
    write_atomic(path, dumps(data))
    assert tomllib.loads(path.read_text(encoding="utf-8")) == data
    assert [p.name for p in tmp_path.iterdir()] == ["r.toml"]  # no temporary file left behind
