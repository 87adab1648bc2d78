"""A hub repository's safetensors checkpoint, downloaded into a folder and checked against the hub's checksums.

`list_snapshot` asks the hub once for the commit and every file's size and checksum (the LFS sha256 for large
files, the git blob sha1 for the rest); `download_snapshot` fetches the files a conversion needs with
huggingface_hub into a plain folder (resuming a dropped file with a Range request, skipping files already
verified), drives one progress bar for the whole download, and deletes any file whose checksum is not the
hub's.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from pathlib import Path
from typing import Callable

from pydantic import BaseModel

from leaf_cli.errors import LeafError
from leaf_cli.models import hub
from leaf_cli.models.store import sha256_file

# What llama.cpp's converter reads from a checkpoint; the rest of a repository (README, images) is skipped.
WANTED = ("config.json", "generation_config.json", "*.safetensors", "model.safetensors.index.json",
          "tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "chat_template.jinja",
          "chat_template.json", "special_tokens_map.json", "preprocessor_config.json")
REQUIRED = ("config.json", "tokenizer.json|vocab.json", "tokenizer_config.json", "*.safetensors")


class HubFile(BaseModel):
    name: str
    size: int
    sha256: str | None = None  # LFS files
    git_sha1: str | None = None  # the git blob id (small files)


class Snapshot(BaseModel):
    repo: str
    commit: str
    files: list[HubFile]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def weights_bytes(self) -> int:
        return sum(f.size for f in self.files if f.name.endswith(".safetensors"))


def list_snapshot(repo: str, revision: str) -> Snapshot:
    """The commit `revision` points at and the checkpoint files there; one LeafError line when unusable."""
    from huggingface_hub import HfApi

    with hub.hub_errors(repo, f"{repo}@{revision}"):
        info = HfApi(endpoint=hub.endpoint()).model_info(repo, revision=revision, files_metadata=True)
    files = [HubFile(name=s.rfilename, size=s.size or 0, sha256=s.lfs.sha256 if s.lfs else None,
                     git_sha1=None if s.lfs else s.blob_id)
             for s in info.siblings or [] if _wanted(s.rfilename)]
    names = [f.name for f in files]
    missing = [need for need in REQUIRED if not any(fnmatch.fnmatch(n, alt) for alt in need.split("|") for n in names)]
    if missing:
        raise LeafError(f"{repo}@{revision} is not a safetensors checkpoint leaf can convert: it has no "
                        f"{', '.join(m.replace('|', ' or ') for m in missing)}")
    # Small files first: config.json is checked before gigabytes of weights are fetched.
    files.sort(key=lambda f: (f.name.endswith(".safetensors"), f.name))
    return Snapshot(repo=repo, commit=info.sha or revision, files=files)


def _wanted(name: str) -> bool:
    return "/" not in name and any(fnmatch.fnmatch(name, pattern) for pattern in WANTED)


def download_snapshot(snapshot: Snapshot, folder: Path, verified: set[str], *,
                      on_progress: hub.OnProgress | None = None,
                      on_file: Callable[[HubFile, Path], None] | None = None) -> None:
    """Fetch every file of `snapshot` not in `verified` into `folder`, check it, add it to `verified`.

    `on_file` runs after each file is verified (the caller records it and may check config.json).
    """
    from huggingface_hub import hf_hub_download

    done = sum(f.size for f in snapshot.files if f.name in verified)
    for file in snapshot.files:
        if file.name in verified and (folder / file.name).is_file():
            continue
        where = f"{snapshot.repo}/{file.name}@{snapshot.commit[:12]}"
        with hub.hub_errors(snapshot.repo, where):
            path = Path(hf_hub_download(snapshot.repo, file.name, revision=snapshot.commit, local_dir=folder,
                                        endpoint=hub.endpoint(),
                                        tqdm_class=hub.bar_class(on_progress, done, snapshot.total_bytes)))
        check_file(snapshot, file, path)
        done += file.size
        if on_progress is not None:
            on_progress(done, snapshot.total_bytes)
        verified.add(file.name)
        if on_file is not None:
            on_file(file, path)


def check_file(snapshot: Snapshot, file: HubFile, path: Path) -> None:
    """The file's checksum must be the hub's; a file that fails is deleted (the next pull fetches it anew)."""
    if file.sha256:
        expected, actual, kind = file.sha256, sha256_file(path), "sha256"
    elif file.git_sha1:
        expected, actual, kind = file.git_sha1, git_blob_sha1(path), "git sha1"
    else:
        return
    if actual != expected:
        path.unlink(missing_ok=True)
        raise LeafError(f"checksum mismatch for {snapshot.repo}/{file.name}: the hub says {kind} {expected}, "
                        f"the download is {actual}; it was deleted, run the pull again")


def git_blob_sha1(path: Path) -> str:
    """git's object id of a file (what the hub reports for files not stored in LFS)."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def read_architectures(config_json: Path) -> list[str]:
    try:
        data = json.loads(config_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LeafError(f"the checkpoint's config.json cannot be read ({exc}); the repository is broken") from None
    return list(data.get("architectures") or [])
