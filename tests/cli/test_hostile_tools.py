"""The file tools against a hostile scripted agent (`leaf fix --model replay:`) on real repositories.

The attacks of issue 23, part 1, performed for real: a background job swaps a folder and a symlink to the
decoy home's `~/.ssh` (or `~/victim`, or `.git`) with renameat2 RENAME_EXCHANGE in a loop while the agent
Reads and Writes through that folder; a symlink named `$HOME` leads into `.git`. Each test first shows
that the attack took effect (the same race read the key through the old check-then-open, the tools saw
both sides of the swap, the link is in the tree), then that nothing hidden was read and nothing outside the
repository was written. The decoy home lies under /var/tmp, outside the sandbox's private /tmp, so inside
the sandbox it is the real one: `~/.ssh` hidden, the rest read-only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from leaf_cli.agent.permissions import _tool_path, safety_refusal
from leaf_cli.llm.messages import ToolCall
from leaf_cli.tools import Workspace, run_tool_call
from tests.cli.fixcli import call, fix_json, script, turn

HAVE_BWRAP = shutil.which("bwrap") is not None
SANDBOXES = ["none", pytest.param("auto", marks=pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap missing"))]
KEY = "DECOY-PRIVATE-KEY-c0ffee"
SWAPPER = """\
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
pairs = [(sys.argv[i].encode(), sys.argv[i + 1].encode()) for i in range(1, len(sys.argv), 2)]
swaps = 0
while True:
    for a, b in pairs:
        if libc.renameat2(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
            raise SystemExit(ctypes.get_errno())
    swaps += 1
    if swaps == 1000:
        open(".swapping", "w").close()  # the race is on
"""


@pytest.fixture()
def home() -> Iterator[Path]:
    """A decoy home outside /tmp: an ssh key, and a folder `victim` holding a file nothing may replace."""
    folder = Path(tempfile.mkdtemp(prefix="leaf-decoy-home-", dir="/var/tmp"))
    (folder / ".ssh").mkdir()
    (folder / ".ssh" / "id_rsa").write_text(f"{KEY}\n")
    (folder / "victim").mkdir()
    (folder / "victim" / "file.txt").write_text("VICTIM\n")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def repo_at(path: Path) -> Path:
    """A git repository with the folders the swaps use: `sub` (no id_rsa in it) and `sub2/file.txt`."""
    (path / "sub").mkdir(parents=True)
    (path / "sub" / "innocent.txt").write_text("innocent\n")
    (path / "sub2").mkdir()
    (path / "sub2" / "file.txt").write_text("REPO\n")
    (path / "src").mkdir()
    (path / "src" / "config").write_text("not git's\n")
    subprocess.run("git init -q -b main . && git add -A && git -c user.name=t -c user.email=t@e commit -qm init",
                   shell=True, cwd=path, check=True)
    return path


def run_fix(repo: Path, tmp_path: Path, sandbox: str, home: Path, *turns: dict) -> dict:
    code, out = fix_json(repo, script(tmp_path / "agent.jsonl", *turns), "--sandbox", sandbox, "task",
                         env={"HOME": str(home)})
    assert code == 0 and out["exit_reason"] == "final_answer", out  # never an internal error
    return out


def observations(out: dict) -> list[str]:
    return [m["content"] for m in out["messages"] if m["role"] == "tool"]


def start_swapping(*pairs: str) -> dict:
    """The agent's first turn: the swapper written into the tree and started in the background; the turn
    ends once it is swapping."""
    names = " ".join(pairs)
    wait = "for i in $(seq 600); do test -e .swapping && break; sleep 0.05; done"
    return turn(call("Write", file_path=".swap.py", content=SWAPPER),
                call("Bash", command=f"nohup python3 .swap.py {names} >/dev/null 2>&1 & {wait}; ls .swapping"))


def spread(calls: list[dict], batches: int = 8) -> list[dict]:
    """`calls` in batches with a short Bash sleep between them: the race spans time, so a swapper that the
    busy machine leaves unscheduled for a moment still meets some of them on each side."""
    out: list[dict] = []
    size = -(-len(calls) // batches)
    for i in range(0, len(calls), size):
        out += [*calls[i:i + size], call("Bash", command=f"sleep 0.1 # {i}")]
    return out


def answers(out: dict, calls: list[dict], name: str) -> list[str]:
    """The observations of the race turn's calls of tool `name` (after the two calls that start the swapper)."""
    seen = observations(out)[2:]
    assert len(seen) == len(calls), seen
    return [text for c, text in zip(calls, seen) if c["name"] == name]


@pytest.fixture()
def swapper(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The same race outside leaf: a tree whose `sub` swaps with a link to a decoy `.ssh`, in a loop."""
    root, secret = tmp_path / "race", tmp_path / "secret"
    (root / "sub").mkdir(parents=True)
    secret.mkdir()
    (secret / "id_rsa").write_text(f"{KEY}\n")
    (root / "keys").symlink_to(secret)
    (root / ".swap.py").write_text(SWAPPER)
    proc = subprocess.Popen(["python3", ".swap.py", "sub", "keys"], cwd=root)
    deadline = time.monotonic() + 30
    while not (root / ".swapping").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield root.resolve(), secret
    finally:
        proc.kill()
        proc.wait()


def test_the_race_wins_against_a_check_then_open(swapper: tuple[Path, Path]) -> None:
    """The attack is real: the old way (resolve and check the path, then open what was checked) reads the key."""
    root, _ = swapper
    ws = Workspace(root)
    leaked = tries = 0
    deadline = time.monotonic() + 20
    while not leaked and time.monotonic() < deadline:
        tries += 1
        try:
            checked = ws.resolve("sub/id_rsa")  # the check: inside the tree, at that instant
            leaked = KEY in Path(checked).read_text()  # the open: through whatever `sub` is now
        except OSError:
            pass
    assert leaked, f"the swap never won the race in {tries} tries"
    # The same race against the tools as they are now: the walk beneath the tree never follows `sub` out.
    seen = []
    for i in range(300):
        seen.append(run_tool_call(ToolCall(id="c", name="Read", arguments={"file_path": "sub/id_rsa"}), ws).text)
        if i % 20 == 0:
            time.sleep(0.01)  # spread over time: the swapper gets its turns on a busy machine
    assert not any(KEY in text for text in seen)
    assert any(t.startswith("PermissionError: sub/id_rsa is outside") for t in seen)  # it saw the link ...
    assert any(t.startswith("FileNotFoundError") for t in seen)  # ... and the folder


def test_the_gate_never_raises_under_the_race(swapper: tuple[Path, Path]) -> None:
    """realpath raises OSError when the link turns into a folder between its lstat and readlink; the gate
    then refuses the call instead of ending the run with an internal error."""
    root, _ = swapper
    raised = 0
    deadline = time.monotonic() + 20
    while not raised and time.monotonic() < deadline:
        try:
            _tool_path("sub/x/config", root, root)
        except OSError:
            raised += 1
    assert raised, "realpath never raised under the swap"
    calls = [ToolCall(id="c", name=name, arguments={"file_path": "sub/x/config", "content": "x"})
             for name in ("Write", "Edit")] * 2000
    answers = [safety_refusal(c, root, root) for c in calls]  # an OSError here would fail the test
    assert all(a is None or a.startswith("the call's paths could not be checked (") for a in answers)


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_read_and_write_through_a_swapped_symlink_reach_nothing_outside(
        tmp_path: Path, sandbox: str, home: Path) -> None:
    repo = repo_at(tmp_path / "work")
    (repo / "keys").symlink_to(home / ".ssh")
    (repo / "vict").symlink_to(home / "victim")
    # Each call differs from the one before (5 identical calls in a row end a `leaf fix` run as a loop).
    race = []
    for i in range(80):
        race.append(call("Read", file_path="sub/id_rsa", limit=1000 + i))
        if i % 2:
            race.append(call("Write", file_path="sub2/file.txt", content=f"AGENT{i:02d}\n"))
        if i % 4 == 0:
            race.append(call("Glob", pattern="sub/*", path="." if i % 8 else "./"))
    race = spread(race)
    out = run_fix(repo, tmp_path, sandbox, home, start_swapping("sub", "keys", "sub2", "vict"), turn(*race),
                  {"content": "ok"})
    seen = observations(out)
    reads, writes, globs = (answers(out, race, name) for name in ("Read", "Write", "Glob"))
    # The attack took effect: the tools met the link and the folder, both, under each name.
    assert any(t.startswith("PermissionError: sub/id_rsa is outside") for t in reads), reads[:5]
    assert any(t.startswith("FileNotFoundError") for t in reads), reads[:5]
    assert any(t.startswith("PermissionError: sub2/file.txt is outside") for t in writes), writes[:5]
    assert any(t == "Wrote sub2/file.txt (8 bytes)." for t in writes), writes[:5]
    # Nothing hidden was read, nothing outside written.
    assert all(KEY not in t for t in seen) and KEY not in out["patch"]
    assert all("id_rsa" not in t for t in globs)
    assert (home / "victim" / "file.txt").read_text() == "VICTIM\n"
    assert sorted(p.name for p in (home / "victim").iterdir()) == ["file.txt"]  # no temp file left there
    assert (home / ".ssh" / "id_rsa").read_text() == f"{KEY}\n"


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_folder_named_home_leading_into_git_is_not_written(tmp_path: Path, sandbox: str, home: Path) -> None:
    repo = repo_at(tmp_path / "work")
    config = (repo / ".git" / "config").read_bytes()
    mark = tmp_path / "fsmonitor-ran"
    planted = f"[core]\n\tfsmonitor = touch {mark}\n"
    out = run_fix(repo, tmp_path, sandbox, home,
                  turn(call("Bash", command="python3 -c 'import os; os.symlink(\".git\", \"$HOME\")' && readlink '$HOME'")),
                  turn(call("Write", file_path="$HOME/config", content=planted),
                       call("Edit", file_path="$HOME/config", old_string="[core]", new_string=planted)),
                  {"content": "ok"})
    seen = observations(out)
    assert seen[0].startswith("Exit code: 0\nSTDOUT:\n.git\n") and os.readlink(repo / "$HOME") == ".git"  # planted
    assert all(t.startswith("PermissionError: writing inside .git ($HOME/config)") for t in seen[1:]), seen
    assert (repo / ".git" / "config").read_bytes() == config
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, check=True)  # the user's next git command
    assert not mark.exists()


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_folder_swapped_with_a_link_to_git_is_not_written(tmp_path: Path, sandbox: str, home: Path) -> None:
    """The gate checks `src/config` while `src` is a folder; the swap makes it `.git` before the write."""
    repo = repo_at(tmp_path / "work")
    (repo / "gitlink").symlink_to(".git")
    config = (repo / ".git" / "config").read_bytes()
    planted = "[core]\n\tfsmonitor = touch fsmonitor-ran\n#{:02d}\n"
    race = spread([call("Write", file_path="src/config", content=planted.format(i)) for i in range(60)])
    out = run_fix(repo, tmp_path, sandbox, home, start_swapping("src", "gitlink"), turn(*race), {"content": "ok"})
    seen = answers(out, race, "Write")
    assert any(t.startswith("PermissionError: writing inside .git") or "Read-only file system" in t
               for t in seen), seen[:5]  # the swap was seen
    assert any(t == f"Wrote src/config ({len(planted.format(0))} bytes)." for t in seen), seen[:5]
    assert (repo / ".git" / "config").read_bytes() == config


@pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap missing")
def test_the_sandbox_is_the_boundary_with_the_path_checks_off(tmp_path: Path, home: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """With the tools' own confinement switched off, what they reach is what the sandbox lets them reach."""
    from leaf_cli.agent import sandbox as sandbox_module

    repo = repo_at(tmp_path / "work")
    calls = [call("Read", file_path=str(home / ".ssh" / "id_rsa")), call("Glob", pattern=str(home / ".ssh" / "*")),
             call("Write", file_path=str(home / "victim" / "file.txt"), content="AGENT\n"),
             call("Edit", file_path=str(home / "victim" / "file.txt"), old_string="VICTIM", new_string="AGENT")]
    # Outside any sandbox, unconfined, these calls do reach the key and the victim: the attack is real.
    free = Workspace(repo, confined=False)
    assert KEY in run_tool_call(ToolCall(id="c", **calls[0]), free).text
    real = sandbox_module.host_argv
    monkeypatch.setattr(sandbox_module, "host_argv", lambda root, confined=False: real(root, confined=False))
    out = run_fix(repo, tmp_path, "auto", home, turn(*calls), {"content": "ok"})
    seen = observations(out)
    assert seen[0].startswith("FileNotFoundError: [Errno 2] No such file or directory") and seen[1] == "No files matched."
    # The home inside the sandbox is a private one (agent/sandbox_home.py): the write lands there, never in the
    # real home, and the Edit finds the private copy, not the victim's bytes.
    assert seen[2].startswith("Wrote ") and not seen[3].startswith("Edited ")
    assert (home / "victim" / "file.txt").read_text() == "VICTIM\n"
