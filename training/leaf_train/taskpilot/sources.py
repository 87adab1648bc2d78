"""Snapshot sources: turn a `--source` spec into a source tree on disk plus what is known about it.

Specs: a local git repository (`PATH[@REV]`), a git URL (`URL[@REV]`), `pypi:NAME==VERSION` (the sdist,
fetched with `pip download --no-deps --no-binary :all:`), or `swebench:FILE` (every distinct repository
state named in a SWE-bench / SWE-rebench task file). Network is used here only, never in a sandbox.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from leaf_cli.errors import LeafError
from leaf_cli.tasks import GIT_IDENTITY, run_process


class SourceTree(BaseModel):
    """A repository state to build a snapshot from: the files in `tree` (no .git), and its provenance."""

    id: str = Field(description="Short stable name, used for folders and instance ids.")
    spec: str
    tree: Path
    package: str
    version: str
    source: dict[str, Any] = Field(default_factory=dict, description="The task `source` record (kind, package, ...).")
    install_config: dict[str, Any] = Field(default_factory=dict)


class SourceError(LeafError):
    """A well-formed spec whose repository could not be fetched: the snapshot is skipped with this reason."""


class SkippedSource(BaseModel):
    """A repository state named by a spec that could not be fetched: reported, and the run goes on."""

    spec: str
    id: str
    reason: str


def resolve(spec: str, cache: Path) -> list[SourceTree | SkippedSource]:
    """The source trees `spec` names (one, except for a task file). A malformed spec raises LeafError."""
    if spec.startswith("pypi:"):
        return [_pypi(spec, cache)]
    if spec.startswith("swebench:"):
        return _swebench(spec, cache)
    location, _, rev = spec.rpartition("@") if _has_rev(spec) else (spec, "", "")
    return [_git(spec, location, rev or "HEAD", cache)]


def _has_rev(spec: str) -> bool:
    tail = spec.rsplit("/", 1)[-1]
    return "@" in tail and not spec.startswith("git@")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-").lower() or "repo"


def _pypi(spec: str, cache: Path) -> SourceTree:
    requirement = spec[len("pypi:"):].strip()
    match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([A-Za-z0-9_.!+-]+)", requirement)
    if match is None:
        raise LeafError(f"bad source {spec!r}: write pypi:NAME==VERSION")
    name, version = match.groups()
    sdist = _download_sdist(name, version, cache / "sdists")
    tree = cache / "trees" / f"{_slug(name)}-{version}"
    if not (tree / ".unpacked").exists():
        shutil.rmtree(tree, ignore_errors=True)
        _unpack(sdist, tree)
        (tree / ".unpacked").write_text(sdist.name)
    info = _pkg_info(tree)
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
    return SourceTree(
        id=f"{_slug(name)}-{version}", spec=spec, tree=tree, package=name, version=version,
        source={"kind": "taskpilot", "origin": "pypi_sdist", "package": name, "version": version,
                "sdist_filename": sdist.name, "sdist_sha256": digest},
        install_config={"pip_packages": info},
    )


def _download_sdist(name: str, version: str, folder: Path) -> Path:
    """The cached sdist, downloaded once. pip prepares its metadata with the package's own build backend
    (setuptools, flit, hatch, poetry, ...) in an isolated build environment; `--no-binary NAME` asks for
    the sdist of this package only, so the backend itself comes as a wheel (not built from source)."""
    folder.mkdir(parents=True, exist_ok=True)
    found = _find_sdist(folder, name, version)
    if found is not None:
        return found
    result = run_process([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name,
                          "--disable-pip-version-check", "-q", "-d", str(folder), f"{name}=={version}"],
                         cwd=folder, timeout=600)
    found = _find_sdist(folder, name, version)
    if not result.ok or found is None:
        tail = (result.stderr.strip() or result.stdout.strip())[-300:]
        raise SourceError(f"cannot download the sdist of {name}=={version}: {tail or 'no sdist found'}")
    return found


def _find_sdist(folder: Path, name: str, version: str) -> Path | None:
    norm = re.sub(r"[-_.]+", "[-_.]", re.escape(name.lower()).replace("\\", ""))
    for path in sorted(folder.iterdir()):
        if re.fullmatch(rf"{norm}-{re.escape(version)}\.(tar\.gz|zip|tar\.bz2)", path.name.lower()):
            return path
    return None


def _unpack(archive: Path, dest: Path) -> None:
    """Unpack the sdist's single top-level folder into `dest` (links and absolute paths refused)."""
    staging = dest.with_name(dest.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(staging)
    else:
        with tarfile.open(archive) as tf:
            tf.extractall(staging, filter="data")
    tops = [p for p in staging.iterdir()]
    root = tops[0] if len(tops) == 1 and tops[0].is_dir() else staging
    shutil.move(str(root), str(dest))
    shutil.rmtree(staging, ignore_errors=True)


def _pkg_info(tree: Path) -> list[str]:
    """The sdist's unconditional runtime requirements (PKG-INFO Requires-Dist without markers)."""
    path = tree / "PKG-INFO"
    if not path.is_file():
        return []
    meta = Parser().parsestr(path.read_text(encoding="utf-8", errors="replace"))
    return [r.strip() for r in meta.get_all("Requires-Dist") or [] if ";" not in r]


def _git(spec: str, location: str, rev: str, cache: Path) -> SourceTree:
    """A local repository or a URL (cloned once into the cache) at `rev`, exported without history."""
    is_url = "://" in location or location.startswith("git@")
    if is_url:
        repo = cache / "clones" / _slug(location)
        if not (repo / "HEAD").exists():
            _run(["git", "clone", "-q", "--bare", location, str(repo)], cache, f"cannot clone {location}")
    else:
        repo = Path(location).expanduser().resolve()
        if not (repo / ".git").exists() and not (repo / "HEAD").exists():
            raise LeafError(f"bad source {spec!r}: {repo} is not a git repository")
    commit = _run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], repo, f"no commit {rev!r} in {location}").strip()
    name = _slug(Path(location.rstrip("/")).name.removesuffix(".git"))
    tree = cache / "trees" / f"{name}-{commit[:8]}"
    if not (tree / ".unpacked").exists():
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir(parents=True)
        archive = tree.parent / f"{tree.name}.tar"
        _run(["git", "archive", "--format=tar", f"--output={archive}", commit], repo, f"cannot export {commit}")
        _run(["tar", "-xf", str(archive), "-C", str(tree)], tree, "cannot unpack the export")
        archive.unlink()
        (tree / ".unpacked").write_text(commit)
    return SourceTree(id=f"{name}-{commit[:8]}", spec=spec, tree=tree, package=name, version=commit[:12],
                      source={"kind": "taskpilot", "origin": "git", "package": name, "upstream_id": f"{location}@{commit}"})


def _swebench(spec: str, cache: Path) -> list[SourceTree | SkippedSource]:
    """One source per distinct (repo, base_commit) of a SWE-bench-style task file; repos from GitHub."""
    from leaf_cli.tasks import read_rows

    trees: list[SourceTree | SkippedSource] = []
    seen: set[tuple[str, str]] = set()
    for row in read_rows(Path(spec[len("swebench:"):])):
        repo, commit = row.get("repo"), row.get("base_commit")
        if not repo or not commit or (repo, commit) in seen:
            continue
        seen.add((repo, commit))
        url = repo if ("://" in repo or Path(repo).exists()) else f"https://github.com/{repo}.git"
        try:
            tree = _git(spec, url, commit, cache)
        except SourceError as exc:
            trees.append(SkippedSource(spec=spec, id=f"{_slug(repo)}-{commit[:8]}", reason=str(exc)))
            continue
        tree.source.update({"upstream_id": row.get("instance_id")})
        tree.install_config = dict(row.get("install_config") or {})
        tree.version = str(row.get("version") or tree.version)
        trees.append(tree)
    return trees


def _run(argv: list[str], cwd: Path, what: str) -> str:
    cwd.mkdir(parents=True, exist_ok=True)
    result = run_process(argv, cwd=cwd, timeout=1800, env=GIT_IDENTITY)
    if not result.ok:
        raise SourceError(f"{what}: {(result.stderr.strip() or result.stdout.strip())[-300:]}")
    return result.stdout
