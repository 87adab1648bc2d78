"""The sandbox's home is empty but for an allowlist of toolchain folders: a hostile scripted agent
(`leaf fix --model replay:`) reads for credentials that a denylist of folders missed, on a decoy home.

The decoy home lies outside /tmp (the sandbox's private /tmp would hide it anyway and prove nothing). Each
attack first runs with `--sandbox none`, where it reads every secret (the files are there and readable),
then under the default sandbox, where nothing of them reaches the agent, `--json` or the trajectory.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from tests.cli.fixcli import call, leaf_process, script, turn

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap missing")
SECRETS = {
    ".config/git/credentials": "https://alice:ghp_XDGstore9Q2LpR7wZt4Kb1Nc8Vm3Yh6Jd0Fs@github.com\n",
    ".cache/huggingface/token": "hf_DecoyHubToken8Rk2Lq5Wn1Zx7Cv4Bm9Pt3\n",
    ".cargo/credentials.toml": '[registry]\ntoken = "cio_DecoyCratesToken6Hj3Kd8Ls1Qw5Er"\n',
    ".gitconfig": '[user]\n\tname = Alice Decoy\n\temail = alice@example.com\n'
                  '[http]\n\textraheader = "AUTHORIZATION: bearer gitconfig-decoy-token-4Nq8Zr"\n',
    ".bashrc": "export GITHUB_TOKEN=ghp_BashrcDecoy5Tz8Wq2Lm6Rk9Pv3Xc1Nb7\n",
    ".ssh/id_ed25519": "DECOY-PRIVATE-KEY-7Yt4\n",
}
MARKERS = ["ghp_XDGstore9Q2L", "hf_DecoyHubToken", "cio_DecoyCrates", "gitconfig-decoy-token", "ghp_BashrcDecoy",
           "DECOY-PRIVATE-KEY"]


@pytest.fixture()
def decoy_home() -> Iterator[Path]:
    """A home with credentials where a denylist of folders did not look, and a cargo toolchain folder."""
    parent = Path(tempfile.mkdtemp(prefix="leaf-decoy-home-", dir="/var/tmp" if Path("/var/tmp").is_dir() else None))
    home = parent / "alice"
    for rel, text in SECRETS.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    tool = home / ".cargo" / "bin" / "decoy-tool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\necho decoy-tool-runs\n")
    tool.chmod(0o755)
    yield home
    shutil.rmtree(parent, ignore_errors=True)


def _fix(repo: Path, tmp_path: Path, home: Path, sandbox: str, command: str) -> tuple[str, str]:
    spec = script(tmp_path / f"s-{sandbox}.jsonl", turn(call("Bash", command=command)), {"content": "ok"})
    env = {"HOME": str(home)}
    proc = leaf_process("fix", "--json", "--sandbox", sandbox, "--model", spec, "task", cwd=repo, env=env,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr.decode()
    out = json.loads(stdout)
    seen = next(m["content"] for m in out["messages"] if m["role"] == "tool")
    return seen, stdout.decode() + Path(out["trajectory"]).read_text()


def test_credentials_in_the_home_are_not_readable_in_the_sandbox(git_repo: Path, tmp_path: Path, decoy_home: Path) -> None:
    reads = "; ".join(f"cat ~/{rel}" for rel in SECRETS)
    seen, _ = _fix(git_repo, tmp_path, decoy_home, "none", reads)
    assert all(marker in seen for marker in MARKERS), seen  # the attack works where nothing protects the home
    probe = f"{reads}; ls -A ~; ~/.cargo/bin/decoy-tool; git config user.name; env | grep -c GITHUB_TOKEN"
    seen, records = _fix(git_repo, tmp_path, decoy_home, "auto", probe)
    for marker in MARKERS:
        assert marker not in seen and marker not in records, marker
    assert "decoy-tool-runs" in seen  # a toolchain folder of the allowlist is there, read-only
    assert "Alice Decoy" in seen  # the identity of ~/.gitconfig, and nothing else of it
    stdout = seen.split("STDOUT:\n", 1)[1].split("\nSTDERR:\n", 1)[0]
    assert stdout.rstrip().endswith("\n0")  # `bash -l` did not export the .bashrc token either


def test_agent_writes_under_the_home_stay_in_its_private_home(git_repo: Path, tmp_path: Path, decoy_home: Path) -> None:
    # through a variable: the gate's lexical check (a courtesy) does not see it, the sandbox must hold
    plant = ('h=$HOME; echo planted > "$h/.bashrc"; mkdir -p "$h/.config/autostart" && echo x > "$h/.config/autostart/evil"; '
             'echo x > "$h/.cargo/bin/decoy-tool"; echo written > "$h/note" && cat "$h/note"')
    seen, _ = _fix(git_repo, tmp_path, decoy_home, "auto", plant)
    assert "written" in seen  # the home is writable inside, as a command expects
    assert (decoy_home / ".bashrc").read_text() == SECRETS[".bashrc"]
    assert not (decoy_home / ".config" / "autostart").exists() and not (decoy_home / "note").exists()
    assert (decoy_home / ".cargo" / "bin" / "decoy-tool").read_text().startswith("#!/bin/sh")
    _fix(git_repo, tmp_path, decoy_home, "none", plant)  # where nothing protects the home, the attack lands
    assert (decoy_home / ".bashrc").read_text() == "planted\n" and (decoy_home / "note").is_file()
