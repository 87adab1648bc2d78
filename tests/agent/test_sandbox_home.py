"""The sandbox home's choices: which folders of a home are shown, the login profile it writes, and the
Seatbelt profile's home rules (macOS cannot run here: its profile is checked as text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.agent.sandbox_home import login_profile, visible_folders
from leaf_cli.tools.seatbelt import seatbelt_profile


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "u"
    for rel in (".pyenv/versions", ".cargo/bin", ".cargo/registry", ".config/gh", ".cache/huggingface", ".m2/repository",
                ".ssh", "venvs/proj/bin", "notes"):
        (home / rel).mkdir(parents=True)
    (home / ".cargo" / "credentials.toml").write_text("token")
    (home / ".m2" / "settings.xml").write_text("<password/>")
    monkeypatch.setenv("VIRTUAL_ENV", str(home / "venvs" / "proj"))
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    return home


def test_only_allowlisted_folders_and_the_active_venv_are_shown(home: Path) -> None:
    shown = visible_folders(home, extra=["notes", "~/.ssh", "/abs/missing"], hidden=[home / ".ssh"])
    under = sorted(str(p.relative_to(home)) for p in shown if p.is_relative_to(home))
    assert under == [".cargo/bin", ".cargo/registry", ".m2/repository", ".pyenv", "notes", "venvs/proj"]
    # never the home itself, even when the user names it
    assert home not in visible_folders(home, extra=["."]) and home not in visible_folders(home, extra=[str(home)])


def test_login_profile_exports_allowlisted_values_only() -> None:
    captured = {"PATH": "/h/.pyenv/shims:/usr/bin", "PYENV_ROOT": "/h/.pyenv", "GITHUB_TOKEN": "ghp_x1", "SHLVL": "1",
                "HTTPS_PROXY": "http://u:pw@proxy:3128", "LANG": "it's C", "PYENV_VERSION": "3.11.7", "BASH_FUNC_x%%": "() {"}
    profile = login_profile(captured, {"PYENV_VERSION": "3.12", "PATH": "/usr/bin"})
    exports = [line for line in profile.splitlines() if not line.startswith("#")]
    assert exports == ["export LANG='it'\"'\"'s C'", "export PATH=/h/.pyenv/shims:/usr/bin", "export PYENV_ROOT=/h/.pyenv",
                       "export PYENV_VERSION=3.11.7"]


def test_seatbelt_denies_the_home_but_its_allowlist_and_the_work_tree() -> None:
    profile = seatbelt_profile(writable=[Path("/Users/u/src/p")], tmp_dir=Path("/private/tmp/leaf-x"),
                               hidden=[Path("/Users/u/.pyenv/secret")], home=Path("/Users/u"),
                               home_readable=[Path("/Users/u/.pyenv")]).splitlines()
    deny = profile.index('(deny file-read* (subpath "/Users/u"))')
    assert profile.index('(allow file-read* (subpath "/Users/u/.pyenv"))') > deny
    assert profile.index('(allow file-read* (subpath "/Users/u/src/p"))') > deny
    assert '(allow file-read-metadata (literal "/Users/u/src"))' in profile
    assert profile.index('(deny file-read* file-write* (subpath "/Users/u/.pyenv/secret"))') > deny + 2
    assert not any("/Users/u" in line for line in seatbelt_profile(writable=[], tmp_dir=Path("/t")).splitlines())
