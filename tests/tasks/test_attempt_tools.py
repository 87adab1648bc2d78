"""A real attempt's tools (leaf eval, TaskPilot and RL share `agent_workspace`): unconfined as FrogNano's
harness, with the file tools inside the same bubblewrap sandbox as Bash (tools/host.py)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from leaf_cli.agent import Limits
from leaf_cli.llm.replay import ReplayEngine
from leaf_cli.tasks import get_env, make_attempt_workspace, make_sandbox
from leaf_cli.tasks.runner.attempt import agent_workspace, run_attempt
from leaf_cli.tools import host as host_module
from leaf_cli.tools.host import leaf_root

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
LEAF_FILE = Path(host_module.__file__).resolve().parent / "texts.py"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def test_attempt_reads_outside_the_tree_and_its_outside_writes_stay_in_the_sandbox(toolz_tasks, tmp_path: Path) -> None:
    path, tasks = toolz_tasks
    task = next(t for t in tasks if t.instance_id.endswith(".second"))
    ws = make_attempt_workspace(task, tmp_path / "a", path.parent)
    env, sandbox = get_env(task, path.parent), make_sandbox("bwrap")
    host_secret, escape, probe = tmp_path / "secret.txt", tmp_path / "escape.txt", Path("/etc/leaf-attempt-probe")
    host_secret.write_text("host only\n")
    assert not probe.exists()
    turns = [{"tool_calls": [call("Read", file_path=str(LEAF_FILE), limit=1)]},
             {"tool_calls": [call("Write", file_path="../home/note.txt", content="hi")]},
             {"tool_calls": [call("Glob", pattern="../home/*")]},
             {"tool_calls": [call("Read", file_path=str(host_secret))]},
             {"tool_calls": [call("Write", file_path=str(probe), content="x")]},
             {"tool_calls": [call("Write", file_path=str(escape), content="out")]},
             {"tool_calls": [call("Write", file_path="NOTES.txt", content="kept\n")]},
             {"content": "Done."}]
    try:
        outcome = run_attempt(task, ReplayEngine(turns), ws, env, sandbox, limits=Limits(max_turns=10))
    finally:
        if probe.exists():  # root here: never leave a stray file on the host
            probe.unlink()
            pytest.fail("a Write outside the tree landed on the host's /etc")
    traj = outcome.trajectory
    observations = [m.content for m in traj.messages if m.role == "tool"]
    assert traj.exit_reason == "final_answer" and len(observations) == 7
    assert observations[0] == f'{LEAF_FILE}\n1. """Every observation text the five Leaf tools write, in one place, to be read beside FrogNano\'s harness.'
    assert observations[1] == f"Wrote {ws.root}/../home/note.txt (2 bytes)."  # HOME: bound writable beside the tree
    assert observations[2] == f"{ws.root}/../home/note.txt" and (ws.home / "note.txt").read_text() == "hi"
    assert observations[3] == f"FileNotFoundError: [Errno 2] No such file or directory: '{host_secret}'"  # /tmp is private
    assert observations[4] == f"OSError: [Errno 30] Read-only file system: '{probe}'"
    assert observations[5] == f"Wrote {escape} (3 bytes)." and not escape.exists()
    assert observations[6] == "Wrote NOTES.txt (5 bytes)." and "NOTES.txt" in outcome.patch


def test_agent_workspace_is_unconfined_with_its_file_tools_in_the_sandbox(toolz_tasks, tmp_path: Path) -> None:
    path, tasks = toolz_tasks
    task = next(t for t in tasks if t.instance_id.endswith(".second"))
    ws = make_attempt_workspace(task, tmp_path / "a", path.parent)
    env, sandbox = get_env(task, path.parent), make_sandbox("bwrap")
    tools_ws = agent_workspace(ws, env, sandbox)
    # The attempt's binds, plus leaf itself (the file tools' host imports it): one sandbox for Bash and the host
    box = sandbox.wrap([], cwd=ws.root, writable=[ws.root, ws.home], readonly=[env.path.parent, leaf_root()],
                       tmp=ws.tmp)
    try:
        assert not tools_ws.confined and tools_ws.file_host is not None
        assert tools_ws.file_host.argv[:len(box)] == box and "--confined" not in tools_ws.file_host.argv
        # Bash: the client of the episode's one bwrap, which runs the command server under the same binds
        # (its socket in a host folder of its own: never in the /tmp the agent writes)
        assert tools_ws.bash_prefix[-1] == "--" and tools_ws.bash_prefix[-2].endswith("/sock")
        assert not Path(tools_ws.bash_prefix[-2]).is_relative_to(ws.tmp)
        holders = [argv for argv in _cmdlines() if argv[:len(box)] == box and "serve" in argv[len(box):]]
        assert holders  # bwrap and its forked namespace parent both show this argv
    finally:
        tools_ws.end_episode()
    assert not [argv for argv in _cmdlines() if argv[:len(box)] == box]  # the episode's end killed it


def test_one_tmp_for_the_whole_attempt_and_none_shared_between_attempts(toolz_tasks, tmp_path: Path) -> None:
    """FrogNano's container had one /tmp per episode: every Bash call and the file tools share the attempt's."""
    path, tasks = toolz_tasks
    task = next(t for t in tasks if t.instance_id.endswith(".second"))
    env, sandbox = get_env(task, path.parent), make_sandbox("bwrap")
    name = f"leaf-14c-{tmp_path.name}"  # unique on this host: a stray /tmp file from another run cannot pass
    x, y = Path("/tmp") / f"{name}-x", Path("/tmp") / f"{name}-y"
    first = make_attempt_workspace(task, tmp_path / "a", path.parent)
    turns = [{"tool_calls": [call("Bash", command=f"echo bash-one > {x}")]},
             {"tool_calls": [call("Bash", command=f"cat {x}")]},
             {"tool_calls": [call("Write", file_path=str(y), content="from-write\n")]},
             {"tool_calls": [call("Bash", command=f"cat {y}")]},
             {"tool_calls": [call("Read", file_path=str(x))]},
             {"content": "Done."}]
    outcome = run_attempt(task, ReplayEngine(turns), first, env, sandbox, limits=Limits(max_turns=10))
    observations = [m.content for m in outcome.trajectory.messages if m.role == "tool"]
    assert len(observations) == 5
    assert observations[1] == "Exit code: 0\nSTDOUT:\nbash-one\n\nSTDERR:\n"  # call 1's file, still there in call 2
    assert observations[2] == f"Wrote {y} (11 bytes)."
    assert observations[3] == "Exit code: 0\nSTDOUT:\nfrom-write\n\nSTDERR:\n"  # the file tools' /tmp is Bash's
    assert observations[4] == f"{x}\n1. bash-one"
    assert not x.exists() and not y.exists()  # the host's /tmp received neither
    assert first.tmp == tmp_path / "a" / "tmp" and (first.tmp / x.name).read_text() == "bash-one\n"
    assert "tmp/" not in outcome.raw_patch  # beside the tree, never in the patch

    second = make_attempt_workspace(task, tmp_path / "b", path.parent)
    turns = [{"tool_calls": [call("Bash", command=f"cat {x} {y}")]},
             {"tool_calls": [call("Read", file_path=str(y))]},
             {"content": "Done."}]
    outcome = run_attempt(task, ReplayEngine(turns), second, env, sandbox, limits=Limits(max_turns=10))
    observations = [m.content for m in outcome.trajectory.messages if m.role == "tool"]
    assert observations[0].startswith("Exit code: 1\nSTDOUT:\n\nSTDERR:\n") and "bash-one" not in observations[0]
    assert f"{x}: No such file or directory" in observations[0] and f"{y}: No such file or directory" in observations[0]
    assert observations[1] == f"FileNotFoundError: [Errno 2] No such file or directory: '{y}'"

    shutil.rmtree(tmp_path / "a")  # what the runner's TemporaryDirectory does after the attempt
    assert not first.tmp.exists()  # bwrap's mount points left inside it do not block its removal


def _cmdlines() -> list[list[str]]:
    """Every process's argv on this host (the process table, as /proc shows it)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            raw = (entry / "cmdline").read_bytes() if entry.name.isdigit() else b""
        except OSError:
            continue
        if raw:
            found.append(raw.decode(errors="replace").rstrip("\0").split("\0"))
    return found


def test_a_background_server_from_one_bash_call_answers_the_next_and_dies_with_the_attempt(
        toolz_tasks, tmp_path: Path) -> None:
    """FrogNano's harness kept background jobs alive across calls (one container per episode): a server
    started in call 1 answers call 2, on the sandbox's own loopback; nothing of it outlives the attempt."""
    path, tasks = toolz_tasks
    task = next(t for t in tasks if t.instance_id.endswith(".second"))
    ws = make_attempt_workspace(task, tmp_path / "a", path.parent)
    marker = f"leaf-14e-{tmp_path.name}"  # in the server's argv: finds its processes in the host's table
    start = (f"mkdir -p /tmp/{marker} && echo served-from-call-1 > /tmp/{marker}/hello.txt && "
             f"(nohup python3 -m http.server 8731 --bind 127.0.0.1 --directory /tmp/{marker} > /tmp/srv.log 2>&1 &) "
             "&& echo started")
    query = ("python3 -c \"import time, urllib.request\n"
             "for _ in range(200):\n"
             "    try:\n"
             "        print(urllib.request.urlopen('http://127.0.0.1:8731/hello.txt', timeout=5).read().decode(), end='')\n"
             "        break\n"
             "    except OSError:\n"
             "        time.sleep(0.05)\n\"")
    turns = [{"tool_calls": [call("Bash", command=start)]},
             {"tool_calls": [call("Bash", command=query)]},
             {"tool_calls": [call("Bash", command=f"pgrep -f {marker} >/dev/null && echo alive")]},
             {"content": "Done."}]
    seen: list[list[list[str]]] = []

    class Watching(ReplayEngine):  # looks at the host's process table while the episode runs
        def complete(self, *args: Any, **kwargs: Any) -> Any:
            seen.append([argv for argv in _cmdlines() if marker in " ".join(argv) and "http.server" in argv])
            return super().complete(*args, **kwargs)

    outcome = run_attempt(task, Watching(turns), ws, get_env(task, path.parent), make_sandbox("bwrap"),
                          limits=Limits(max_turns=10))
    observations = [m.content for m in outcome.trajectory.messages if m.role == "tool"]
    assert observations == ["Exit code: 0\nSTDOUT:\nstarted\n\nSTDERR:\n",
                            "Exit code: 0\nSTDOUT:\nserved-from-call-1\n\nSTDERR:\n",  # call 1's server answered
                            "Exit code: 0\nSTDOUT:\nalive\n\nSTDERR:\n"]
    assert seen[0] == [] and len(seen[2]) == 1  # none before call 1; running between the calls
    assert not [argv for argv in _cmdlines() if marker in " ".join(argv)]  # none after the attempt
    assert not [argv for argv in _cmdlines() if str(ws.tmp) in " ".join(argv)]  # nor its sandbox's holder
