"""Sandboxes: timeouts kill the process group; bwrap has no network and a read-only root; docker without
a daemon says what is missing."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.tasks.envs.proc import run_process
from leaf_cli.tasks.envs.backends import make_sandbox
from leaf_cli.tasks.envs.sandbox import BwrapSandbox, SubprocessSandbox

NEEDS_BWRAP = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap is not installed (apt-get install -y bubblewrap)")
NET_PROBE = ("import socket\ns = socket.socket()\ns.settimeout(3)\n"
             "try:\n    s.connect(('1.1.1.1', 53))\n    print('connected')\nexcept OSError as e:\n    print('refused', e)\n")


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    marker = tmp_path / "late"
    began = time.monotonic()
    result = SubprocessSandbox().run(["bash", "-c", f"(sleep 3; touch {marker}) & sleep 30"], cwd=tmp_path,
                                     timeout=0.5, env={"PATH": "/usr/bin:/bin"}, writable=[tmp_path])
    assert result.timed_out and result.returncode is None and time.monotonic() - began < 5
    time.sleep(3.5)
    assert not marker.exists()  # the background child died with its group


def test_output_is_bounded(tmp_path: Path) -> None:
    result = run_process([sys.executable, "-c", "print('x' * 5_000_000)"], cwd=tmp_path, timeout=30)
    assert result.ok and len(result.stdout) <= 20_000


@NEEDS_BWRAP
def test_bwrap_has_no_network_and_a_read_only_root(tmp_path: Path) -> None:
    sandbox = make_sandbox("bwrap")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
    probe = sandbox.run([sys.executable, "-c", NET_PROBE], cwd=tmp_path, timeout=30, env=env, writable=[tmp_path])
    assert probe.ok and probe.stdout.startswith("refused"), probe
    write = sandbox.run(["bash", "-c", "echo ok > inside && touch /usr/leaf-probe"], cwd=tmp_path, timeout=30,
                        env=env, writable=[tmp_path])
    assert not write.ok and "Read-only file system" in write.stderr
    assert (tmp_path / "inside").read_text() == "ok\n"


@NEEDS_BWRAP
def test_bwrap_wrap_is_a_bash_prefix(tmp_path: Path) -> None:
    prefix = BwrapSandbox().wrap([], cwd=tmp_path, writable=[tmp_path], readonly=[Path(sys.prefix)])
    assert prefix[-1] == "--" and "--unshare-net" in prefix and ["--ro-bind", sys.prefix, sys.prefix] == prefix[
        prefix.index(sys.prefix) - 1: prefix.index(sys.prefix) + 2]


@NEEDS_BWRAP
def test_bwrap_commands_given_one_tmp_share_it_and_others_get_a_fresh_one(tmp_path: Path) -> None:
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    work.mkdir(), tmp.mkdir()
    name = f"leaf-sandbox-{tmp_path.name}"
    env = {"PATH": "/usr/bin:/bin"}
    box = BwrapSandbox()

    def sh(script: str, shared: Path | None) -> str:
        argv = box.wrap(["bash", "-c", script], cwd=work, writable=[work], tmp=shared)
        return run_process(argv, cwd=work, timeout=30, env=env).stdout

    sh(f"echo kept > /tmp/{name}", tmp)
    assert sh(f"cat /tmp/{name}", tmp) == "kept\n" and (tmp / name).read_text() == "kept\n"
    assert sh(f"cat /tmp/{name} 2>/dev/null || echo gone", None) == "gone\n"  # no tmp: a fresh tmpfs each time
    assert not (Path("/tmp") / name).exists()


def test_subprocess_ignores_tmp_and_docker_binds_it(tmp_path: Path) -> None:
    from leaf_cli.tasks.envs.docker import DockerSandbox

    argv = ["true"]
    assert SubprocessSandbox().wrap(argv, cwd=tmp_path, writable=[tmp_path], tmp=tmp_path / "t") == argv
    docker = DockerSandbox("img").wrap(argv, cwd=tmp_path, writable=[tmp_path], tmp=tmp_path / "t")
    assert ["-v", f"{tmp_path / 't'}:/tmp"] == docker[docker.index(f"{tmp_path / 't'}:/tmp") - 1:][:2]
    assert f"{tmp_path / 't'}:/tmp" not in DockerSandbox("img").wrap(argv, cwd=tmp_path, writable=[tmp_path])


def test_unknown_sandbox_lists_the_choices() -> None:
    with pytest.raises(LeafError, match="subprocess, bwrap, docker"):
        make_sandbox("podman-ish")


def test_docker_without_a_daemon_says_so() -> None:
    if shutil.which("docker") is None:
        with pytest.raises(LeafError, match="docker CLI"):
            make_sandbox("docker")
        return
    try:
        make_sandbox("docker")
    except LeafError as exc:
        assert "Docker daemon" in str(exc)
    else:
        pytest.skip("[no-docker] a Docker daemon is running here; the no-daemon message cannot be exercised")
