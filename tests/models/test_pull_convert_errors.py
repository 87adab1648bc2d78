"""Bad input to `leaf models pull` of a safetensors model: one line that says what to do, nothing registered,
and an interrupted pull that continues from its stage. The tiny Qwen3.5 checkpoint is served by the loopback
stand-in hub under the real repository id (no model hub is reachable here); everything else is real."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from leaf_cli.cli.main import app
from leaf_cli.errors import LeafError
from leaf_cli.models.pull import pull
from leaf_cli.models.pull_convert import work_dir
from leaf_cli.models.registry import data_dir, get_manifest
from leaf_cli.models.store import locate, read_downloads
from tests.support.fake_hub import FakeHub, HubFile
from tests.support.tiny_qwen35 import REPO_ID

pytestmark = pytest.mark.llama
runner = CliRunner()
SHARD = "model-00001-of-00002.safetensors"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    with FakeHub() as fake:
        monkeypatch.setenv("HF_ENDPOINT", fake.url)
        yield fake


@pytest.fixture
def served(hub: FakeHub, tiny_qwen35_hf: Path) -> dict[str, HubFile]:
    """The tiny checkpoint served as microsoft/FrogNano-4B-2609."""
    return hub.add_folder(REPO_ID, tiny_qwen35_hf)


def nothing_registered() -> None:
    assert read_downloads() == {} and locate(get_manifest("frognano-4b")) is None
    assert not (data_dir() / "gguf").exists()


def test_no_network_is_said_at_once_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.utils._http as hub_http

    def no_retries(seconds: float) -> None:
        raise AssertionError("a retry: the user would wait and see retry lines")

    monkeypatch.setattr(hub_http.time, "sleep", no_retries)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    result = runner.invoke(app, ["models", "pull", "frognano-4b"])
    assert result.exit_code == 2
    assert result.stderr.startswith("leaf: error: cannot reach the model hub for microsoft/FrogNano-4B-2609@main")
    assert result.stderr.count("\n") == 1
    nothing_registered()


def test_a_repository_without_a_checkpoint(hub: FakeHub, tiny_qwen35_hf: Path) -> None:
    hub.add(REPO_ID, "README.md", b"# weights coming soon\n")
    hub.add(REPO_ID, "config.json", (tiny_qwen35_hf / "config.json").read_bytes())
    with pytest.raises(LeafError, match=r"is not a safetensors checkpoint leaf can convert: it has no "
                                        r"tokenizer.json or vocab.json, tokenizer_config.json, \*.safetensors"):
        pull(get_manifest("frognano-4b"))
    nothing_registered()


def test_an_unsupported_architecture_stops_before_the_weights(served: dict[str, HubFile]) -> None:
    config = json.loads(served["config.json"].content)
    config["architectures"] = ["MambaForCausalLM"]
    served["config.json"].content = json.dumps(config).encode()
    with pytest.raises(LeafError, match="is a MambaForCausalLM checkpoint; leaf converts and runs "
                                        "Qwen3_5ForConditionalGeneration"):
        pull(get_manifest("frognano-4b"))
    assert not served[SHARD].gets  # gigabytes not fetched for a model leaf cannot run
    nothing_registered()


def test_not_enough_disk_is_said_before_the_download(served: dict[str, HubFile]) -> None:
    served[SHARD].size = 10**16  # the hub advertises 10 PB
    with pytest.raises(LeafError, match=r"not enough disk space to pull frognano-4b: .*download 10000000\.0 GB.*"
                                        r"needs .* free, .* free in .*; free .* and run the pull again"):
        pull(get_manifest("frognano-4b"))
    assert not any(f.gets for f in served.values())
    nothing_registered()


def test_a_checksum_mismatch_deletes_the_file(served: dict[str, HubFile]) -> None:
    served[SHARD].etag = "a" * 64  # the hub's sha256 says one thing, the bytes another (corrupted in transit)
    with pytest.raises(LeafError, match=f"checksum mismatch for {REPO_ID}/{SHARD}: the hub says sha256 a{{64}}"):
        pull(get_manifest("frognano-4b"))
    assert not (work_dir("frognano-4b") / "snapshot" / SHARD).exists()
    nothing_registered()


def test_a_converter_failure_is_one_line_and_leaves_no_partial_file(served: dict[str, HubFile]) -> None:
    # A shard whose bytes are what the hub lists (checksums pass) but not a valid safetensors file.
    served[SHARD].content = served[SHARD].content[:4096]
    with pytest.raises(LeafError, match=r"llama.cpp's converter failed on .*snapshot: .+ \(log: .*convert.log\)"):
        pull(get_manifest("frognano-4b"))
    assert not list(work_dir("frognano-4b").glob("*.gguf*partial"))
    nothing_registered()


@pytest.mark.slow
def test_an_interrupted_pull_continues_from_its_stage_even_offline(served: dict[str, HubFile], hub: FakeHub,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt_at_conversion(stage: str, line: str) -> None:
        if stage == "convert":
            raise KeyboardInterrupt  # the user's Ctrl-C as the converter starts

    with pytest.raises(KeyboardInterrupt):
        pull(get_manifest("frognano-4b"), on_stage=interrupt_at_conversion)
    nothing_registered()
    gets = {name: len(f.gets) for name, f in served.items()}
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # and now the network is gone
    result = runner.invoke(app, ["models", "pull", "frognano-4b", "--quant", "q8_0", "--keep"])
    assert result.exit_code == 0, result.output
    stages = result.stderr.splitlines()
    assert stages[0] == f"resolve: the hub is unreachable; continuing the pull of {REPO_ID}@0123456789ab"
    assert f"download: {REPO_ID}: all 10 files downloaded and verified" in stages
    assert [line.split(":")[0] for line in stages[1:]] == ["resolve", "download", "convert", "quantize", "verify",
                                                           "verify", "register", "register"]
    assert {name: len(f.gets) for name, f in served.items()} == gets  # nothing fetched twice
    path = locate(get_manifest("frognano-4b"))
    assert path is not None and path.name == "FrogNano-4B-2609-Q8_0.gguf"
    assert result.stdout == (f"frognano-4b: {path} (converted from the hub's checksummed safetensors and "
                             "verified)\n")
    assert read_downloads()["frognano-4b"]["quant"] == "q8_0"
    kept = work_dir("frognano-4b")  # --keep: the download and the BF16 GGUF stay for another quantization
    assert (kept / "snapshot" / SHARD).is_file() and (kept / "FrogNano-4B-2609-BF16.gguf").is_file()
    shutil.rmtree(kept)
