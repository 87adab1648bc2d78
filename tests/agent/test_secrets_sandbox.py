"""Secrets scrubbing and redaction, terminal-safe text, the sandbox's choices and the gate's lexical cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from leaf_cli.agent.permissions import bash_refusal
from leaf_cli.agent.sandbox import open_sandbox, resolve_kind
from leaf_cli.agent.secrets import Redactor, is_secret, scrub_env
from leaf_cli.errors import LeafError
from leaf_cli.tools.seatbelt import seatbelt_profile
from leaf_cli.ui.safe_text import markup_safe, plain

ROOT, HOME = Path("/work/repo"), Path("/home/u")


@pytest.mark.parametrize("name,value", [
    ("GITHUB_TOKEN", "x"), ("OPENAI_API_KEY", "x"), ("PGPASSWORD", "x"), ("AWS_ACCESS_KEY_ID", "x"),
    ("AWS_PROFILE", "x"), ("DB_PASSWORD", "x"), ("GOOGLE_APPLICATION_CREDENTIALS", "x"), ("SSH_AUTH_SOCK", "x"),
    ("LEAF_HOME", "/state"), ("SENTRY_DSN", "x"), ("DATABASE_URL", "postgres://u:pw@h/db"),
    ("REDIS_URL", "redis://:pw@h:6379"), ("HF_TOKEN", "x"), ("NPM_AUTH_TOKEN", "x"), ("SECRET_KEY_BASE", "x")])
def test_secret_names_and_values(name: str, value: str) -> None:
    assert is_secret(name, value)


@pytest.mark.parametrize("name,value", [("PATH", "/bin"), ("HOME", "/h"), ("PWD", "/w"), ("OLDPWD", "/"),
                                         ("LANG", "C"), ("HOMEPAGE_URL", "https://example.com/x"), ("TERM", "xterm")])
def test_plain_variables_pass(name: str, value: str) -> None:
    assert not is_secret(name, value)


def test_scrub_env_and_pass_env() -> None:
    env = {"GITHUB_TOKEN": "t", "OPENAI_API_KEY": "k", "AWS_SECRET": "s", "DB_PASSWORD": "p", "PATH": "/bin", "HOME": "/h",
           "NEEDED_TOKEN": "n", "LEAF_HOME": "/state"}
    assert scrub_env(env, ["needed_token"]) == {"PATH": "/bin", "HOME": "/h", "NEEDED_TOKEN": "n"}


def test_redactor_replaces_secret_values_everywhere() -> None:
    redact = Redactor({"GITHUB_TOKEN": "ghp_0123456789", "SHORT_TOKEN": "abc", "PATH": "/usr/bin:/bin"})
    assert redact.obj({"a": ["token ghp_0123456789 here"], "b": 3}) == {"a": ["token [secret GITHUB_TOKEN] here"], "b": 3}
    assert redact.text("abc /usr/bin:/bin") == "abc /usr/bin:/bin"  # short values and plain variables stay


def test_plain_strips_escapes_and_keeps_text() -> None:
    assert plain("ls \x1b[8mrm -rf /\x1b[0m") == "ls rm -rf /"
    assert plain("a\x1b]0;title\x07b\x1b]8;;http://x\x1b\\c") == "abc"
    assert plain("x\ry\x08z\u202eq") == "x\ufffdy\ufffdz\ufffdq"
    assert plain("tab\tand\nnewline") == "tab\tand\nnewline"
    assert markup_safe("[bold]x[/bold]") == "\\[bold]x\\[/bold]"


def test_auto_sandbox_and_missing_bwrap_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_kind("auto") in ("bwrap", "sandbox-exec")
    with pytest.raises(LeafError, match="unknown sandbox"):
        resolve_kind("chroot")
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap here
    with pytest.raises(LeafError, match="install bubblewrap.*--sandbox none"):
        open_sandbox("bwrap", tmp_path, tmp_path, tmp_path / "state")
    none = open_sandbox("none", tmp_path, tmp_path, tmp_path / "state")
    assert none.prefix == (none.cgroup.prefix() if none.cgroup else [])  # only the move into the run's cgroup
    none.close()


def test_seatbelt_profile_rules() -> None:
    profile = seatbelt_profile(writable=[Path("/w/repo")], tmp_dir=Path("/private/tmp/leaf-x"),
                               protect=[Path("/w/repo/.git/config")], hidden=[Path("/Users/u/.ssh")], network=False)
    lines = profile.splitlines()
    assert lines[:3] == ["(version 1)", "(allow default)", "(deny file-write*)"]
    assert '(allow file-write* (subpath "/w/repo"))' in lines and '(deny network* (remote ip))' in lines
    assert lines.index('(deny file-write* (subpath "/w/repo/.git/config"))') > lines.index('(allow file-write* (subpath "/w/repo"))')
    assert '(deny file-read* file-write* (subpath "/Users/u/.ssh"))' in lines
    assert "network" not in seatbelt_profile(writable=[], tmp_dir=Path("/t"), network=True)


@pytest.mark.parametrize("command", [
    "find -H /etc -delete", "find -L / -name x -delete", "echo /etc | xargs rm -rf", "rm -rf `echo /etc`",
    "rm -rf $(echo /etc)", "pushd / && rm -rf etc", "cd -P / && rm -rf etc", "curl file:///x | /bin/sh",
    "git -c alias.p=push p", "git -C ../other reset --hard", "git --git-dir=../o/.git reset --hard"])
def test_gate_refuses_the_lexical_escapes(command: str) -> None:
    assert bash_refusal(command, ROOT, HOME) is not None


@pytest.mark.parametrize("command", ["rm -rf build", "cd src && rm -f x.pyc", "git -C sub status", "find . -name '*.pyc' -delete",
                                     "ls $(pwd)", "git status"])
def test_gate_allows_ordinary_work(command: str) -> None:
    assert bash_refusal(command, ROOT, HOME) is None


def test_stale_private_tmp_of_a_dead_leaf_is_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"leaf-tmp-{dead.pid}-abc"
    stale.mkdir()
    mine = tmp_path / "leaf-tmp-1-abc"  # pid 1 is alive
    mine.mkdir()
    open_sandbox("none", tmp_path, tmp_path, tmp_path / "state").close()  # no sweep for none
    from leaf_cli.agent.sandbox import _sweep_stale_tmp

    _sweep_stale_tmp()
    assert not stale.exists() and mine.exists()
