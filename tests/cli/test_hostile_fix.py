"""`leaf fix` against a hostile scripted agent (`--model replay:`) on real repositories, sandbox on and off.

Each test plays one attack from the safety issue: a decoy HOME holds fake credentials and a global git
config that would run code; the repository is judged byte for byte after `leaf undo`, and the process
table is checked for anything the agent left running. Every test first asserts that its attack took effect
where it can (the file was wrecked, the config planted, the process started, the write landed without the
sandbox), so a Bash that ran nothing fails them. Tests of a hard boundary (the sandbox, the checkpoint, the
reaper) take the safety gate out of the way (`no_gate`): the gate is a courtesy, and a refusal by it would
hide whether the boundary holds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.fixcli import call, fix_json, leaf, leaf_process, script, turn
from tests.repo.gitrepo import fingerprint, messy_repo, sh
from tests.repo.test_hostile_state import git_dir_bytes, tree_bytes

HAVE_BWRAP = shutil.which("bwrap") is not None
SANDBOXES = ["none", pytest.param("auto", marks=pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap missing"))]
SECRETS = {"PGPASSWORD": "pg-secret-1234", "DATABASE_URL": "postgres://app:db-secret-5678@db.example/app",
           "AWS_ACCESS_KEY_ID": "AKIAEXAMPLESECRET9", "GITHUB_TOKEN": "ghp_secretsecret42", "MY_API_KEY": "k-secret-77"}


@pytest.fixture()
def decoy(tmp_path: Path) -> dict[str, str]:
    """A decoy HOME: an ssh key, AWS credentials, and a ~/.gitconfig whose fsmonitor would leave a marker."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("DECOY-PRIVATE-KEY\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = DECOY-AWS\n")
    (home / ".gitconfig").write_text(f"[core]\n\tfsmonitor = touch {tmp_path}/ran-global-fsmonitor\n")
    return {"HOME": str(home), **SECRETS}


@pytest.fixture()
def no_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    """`leaf fix` (in this process, through CliRunner) runs every tool call unasked: only the sandbox,
    the checkpoint and the reaper stand between the agent and what it attacks."""
    from leaf_cli.agent import permissions

    monkeypatch.setattr(permissions, "make_gate", lambda *_a, **_k: lambda _call: None)


def test_decoy_home_config_runs_in_a_plain_git(tmp_path: Path, decoy: dict) -> None:
    """The decoy's ~/.gitconfig is live: a plain `git status` under that HOME runs its fsmonitor, so the
    tests below that find no marker show that leaf's git never read it."""
    repo = messy_repo(tmp_path / "work")
    subprocess.run(["git", "status"], cwd=repo, env={**os.environ, "HOME": decoy["HOME"]}, capture_output=True,
                   timeout=60)
    assert (tmp_path / "ran-global-fsmonitor").exists()


def run_fix(repo: Path, tmp_path: Path, sandbox: str, *turns: dict, env: dict | None = None, extra: tuple = ()) -> dict:
    code, out = fix_json(repo, script(tmp_path / "agent.jsonl", *turns), "--sandbox", sandbox, *extra, "task", env=env)
    assert code == 0, out
    return out


def observations(out: dict) -> list[str]:
    return [m["content"] for m in out["messages"] if m["role"] == "tool"]


def undo(repo: Path) -> None:
    result = leaf("undo", "--workdir", str(repo))
    assert result.exit_code == 0, result.stderr


def processes_with(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return found


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_truncated_objects_and_removed_git_dir_come_back(tmp_path: Path, sandbox: str, decoy: dict,
                                                       no_gate: None) -> None:
    repo = messy_repo(tmp_path / "work")
    before = fingerprint(repo)
    wreck = "find .git/objects -type f -exec chmod u+w {} + -exec truncate -s 0 {} +; rm -rf .git 2>/dev/null; echo done"
    run_fix(repo, tmp_path, sandbox, turn(call("Bash", command=wreck)), {"content": "ok"}, env=decoy)
    # the wreck landed: HEAD and every object are gone (the sandbox's read-only config and hooks stay behind)
    assert not (repo / ".git" / "HEAD").exists()
    assert not [p for p in (repo / ".git").rglob("*") if p.is_file() and "objects" in p.parts and p.stat().st_size]
    undo(repo)
    assert fingerprint(repo) == before
    assert not (tmp_path / "ran-global-fsmonitor").exists()


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_agent_cannot_name_or_reach_leafs_state(tmp_path: Path, sandbox: str, decoy: dict) -> None:
    repo = messy_repo(tmp_path / "work")
    before = fingerprint(repo)
    state = Path(os.environ["LEAF_HOME"])
    probe = f"env | grep -c LEAF_ ; ls -A {state} | wc -l; cat ~/.ssh/id_ed25519 ~/.aws/credentials 2>&1 | head -2; rm -rf src"
    if sandbox != "none":  # without a sandbox this would work: the warning says so
        probe += f"; python3 -c \"import shutil; shutil.rmtree('{state}/store', ignore_errors=True)\" 2>&1"
    out = run_fix(repo, tmp_path, sandbox, turn(call("Bash", command=probe)), {"content": "ok"}, env=decoy)
    seen = observations(out)[0]
    assert seen.startswith("Exit code: 0\nSTDOUT:\n0\n")  # no LEAF_* variable at all
    assert not (repo / "src").exists()  # the probe ran: its rm landed in the work tree
    listed = int(seen.split("STDOUT:\n", 1)[1].splitlines()[1])
    if sandbox == "none":  # without a sandbox the probe sees the state and the credentials, as the warning says
        assert listed > 0 and "DECOY-PRIVATE-KEY" in seen, seen
        return
    assert listed == 0 and "DECOY" not in seen  # state folder and credentials hidden
    undo(repo)
    assert fingerprint(repo) == before


def test_no_sandbox_warns_what_can_reach_the_store(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl", {"content": "nothing to do"})
    result = leaf("fix", "--json", "--workdir", str(git_repo), "--model", spec, "--sandbox", "none", "task")
    assert "no sandbox" in result.stderr and "checkpoints" in result.stderr and "leaf undo" in result.stderr
    assert "/proc/<pid>/environ" in result.stderr and "leaf's environment" in result.stderr


def test_planted_git_config_never_runs_in_leafs_git_and_undo_removes_it(tmp_path: Path, decoy: dict,
                                                                        no_gate: None) -> None:
    repo = messy_repo(tmp_path / "work")
    before = fingerprint(repo)
    git_before = git_dir_bytes(repo)
    mark = tmp_path / "ran"
    plant = (f"git config core.fsmonitor 'touch {mark}-fsmonitor' && git config filter.evil.clean 'touch {mark}-clean; cat' "
             f"&& git config diff.evil.textconv 'touch {mark}-textconv; cat' && git config diff.external 'touch {mark}-ext' "
             f"&& echo '* filter=evil diff=evil' > .gitattributes && echo changed >> src/calc.py && python3 -c \""
             f"import os; p='.git/hooks/reference-transaction'; open(p,'w').write('#!/bin/sh\\ntouch {mark}-hook\\n'); "
             f"os.chmod(p, 0o755)\"")
    run_fix(repo, tmp_path, "none", turn(call("Bash", command=plant)), {"content": "ok"}, env=decoy)
    config = (repo / ".git" / "config").read_text()  # read as bytes, never through git: nothing of it runs
    assert "fsmonitor = touch" in config and "[filter \"evil\"]" in config and "external = touch" in config
    assert os.access(repo / ".git" / "hooks" / "reference-transaction", os.X_OK)
    live = tmp_path / "live"
    shutil.copytree(repo, live, symlinks=True)  # the planted state, kept to show below that it runs
    undo(repo)
    assert not list(tmp_path.glob("ran-*")), "leaf ran the agent's (or the decoy home's) git config"
    assert git_dir_bytes(repo) == git_before and fingerprint(repo) == before
    # the plant was live: a plain git in a copy of the planted repository runs it
    subprocess.run(["bash", "-c", "git status; git diff; git add -A; git update-ref refs/heads/probe HEAD"],
                   cwd=live, capture_output=True, timeout=60, env={**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null"})
    ran = {p.name for p in tmp_path.glob("ran-*")}
    assert {"ran-fsmonitor", "ran-clean", "ran-hook"} <= ran, ran


@pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap missing")
def test_sandbox_keeps_git_config_and_hooks_read_only(tmp_path: Path, no_gate: None) -> None:
    attack = (f"git config core.fsmonitor 'touch {tmp_path}/ran-x'; echo hook > .git/hooks/pre-commit; "
              "python3 -c \"open('.git/config', 'a').write('[alias]\\n\\tx = !true\\n')\"; echo $?")
    repos = {}
    for sandbox in ("none", "auto"):
        repo = messy_repo(tmp_path / sandbox)
        config = (repo / ".git" / "config").read_bytes()
        out = run_fix(repo, tmp_path / sandbox, sandbox, turn(call("Bash", command="echo start"),
                                                              call("Bash", command=attack)), {"content": "ok"})
        repos[sandbox] = (repo, config, observations(out)[1])
    repo, config, _ = repos["none"]  # without the sandbox the writes land
    assert b"fsmonitor" in (repo / ".git" / "config").read_bytes() and (repo / ".git/hooks/pre-commit").exists()
    repo, config, seen = repos["auto"]
    assert "Read-only" in seen, seen
    assert (repo / ".git" / "config").read_bytes() == config and not (repo / ".git/hooks/pre-commit").exists()


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_undo_keeps_ignored_files_modes_crlf_and_empty_dirs(tmp_path: Path, sandbox: str) -> None:
    repo = tmp_path / "work"
    repo.mkdir()
    sh(repo, r"""
        git init -q -b main . && printf '.env\nbuild/\n' > .gitignore && printf 'x\n' > a.txt && git add -A && git commit -qm b
        printf 'SECRET=1\n' > .env && mkdir build && printf 'o' > build/out.o
        printf '* text=auto\n' > .gitattributes && printf 'one\r\ntwo\r\n' > crlf.txt
        printf 'k\n' > key.pem && chmod 600 key.pem && mkdir -p empty/inner
    """)
    before, git_before = tree_bytes(repo), git_dir_bytes(repo)
    agent = "printf '' > .gitignore && chmod 644 key.pem && printf 'lf\\n' > crlf.txt && rmdir empty/inner && mkdir made"
    out = run_fix(repo, tmp_path, sandbox, turn(call("Bash", command=agent)), {"content": "ok"})
    assert (repo / ".gitignore").read_bytes() == b"" and (repo / "crlf.txt").read_bytes() == b"lf\n"  # it all landed
    assert (repo / "key.pem").stat().st_mode & 0o777 == 0o644 and not (repo / "empty/inner").exists()
    assert (repo / "made").is_dir()
    assert "SECRET=1" not in out["patch"] and "b/.env" not in out["patch"]  # ignored at the start: not the run's
    undo(repo)
    assert tree_bytes(repo) == before and git_dir_bytes(repo) == git_before


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_no_process_outlives_the_run(git_repo: Path, tmp_path: Path, sandbox: str) -> None:
    # unique per run of the test: under xdist both workers' tmp_path end in the same name
    token = f"leaf-escape-{hashlib.sha1(str(tmp_path).encode()).hexdigest()[:12]}"
    escape = (f"setsid bash -c 'echo up > up1.txt; exec -a {token} sleep 1.5' >/dev/null 2>&1 </dev/null & "
              f"(bash -c 'echo up > up2.txt; sleep 1.5; echo late > late.txt' >/dev/null 2>&1 </dev/null &) ; "
              f"setsid bash -c 'echo up > up3.txt; sleep 1.5; echo late > late2.txt' >/dev/null 2>&1 </dev/null & "
              "for i in $(seq 250); do [ -e up1.txt ] && [ -e up2.txt ] && [ -e up3.txt ] && break; sleep 0.02; done")
    run_fix(git_repo, tmp_path, sandbox, turn(call("Bash", command=escape)), {"content": "ok"})
    assert all((git_repo / f"up{n}.txt").exists() for n in (1, 2, 3)), "the escapes never started"
    assert not processes_with(token)
    time.sleep(2.0)
    assert not (git_repo / "late.txt").exists() and not (git_repo / "late2.txt").exists()


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_no_process_outlives_a_killed_leaf(git_repo: Path, tmp_path: Path, sandbox: str) -> None:
    agent = ("setsid bash -c 'echo up > up.txt; sleep 2.5; echo late > late.txt' >/dev/null 2>&1 </dev/null & "
             f"for i in $(seq 250); do [ -e up.txt ] && break; sleep 0.02; done; echo go > {git_repo}/started.txt; "
             "sleep 60")
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command=agent)), {"content": "ok"})
    proc = leaf_process("fix", "--json", "--sandbox", sandbox, "--model", spec, "wait", cwd=git_repo,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (git_repo / "started.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.6)  # the watchdog's view of leaf's descendants is refreshed every 0.2 s
    assert (git_repo / "up.txt").exists() and proc.poll() is None, "the escape never started or leaf already ended"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    time.sleep(3.5)
    assert not (git_repo / "late.txt").exists(), "a process of the killed run wrote into the repository"


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_secrets_stay_out_of_env_proc_and_output(git_repo: Path, tmp_path: Path, sandbox: str, decoy: dict) -> None:
    if sandbox == "none" and os.geteuid() == 0:
        pytest.skip("[root] without a sandbox, root's commands can read any process's /proc/PID/environ")
    probe = ("env; echo ---parent; cat /proc/$PPID/environ | tr '\\0' '\\n'; echo ---init; "
             "cat /proc/1/environ | tr '\\0' '\\n'")
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command=probe)), {"content": "ok"})
    proc = leaf_process("fix", "--json", "--sandbox", sandbox, "--model", spec, "task", cwd=git_repo,
                        env={**decoy, "PIP_DECOY_PLAIN": "plain-visible-31"},
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    stdout, _stderr = proc.communicate(timeout=120)
    out = json.loads(stdout)
    seen = observations(out)[0]
    # the probe ran: its own environment and its parent's were read (an ordinary variable passes through);
    # without a sandbox the parent is leaf itself, which its commands cannot read
    parent = seen.split("---parent\n", 1)[1].split("---init\n", 1)[0]
    assert seen.split("---parent\n", 1)[0].count("PIP_DECOY_PLAIN=plain-visible-31") == 1
    assert ("PIP_DECOY_PLAIN=plain-visible-31" in parent if sandbox != "none" else "Permission denied" in seen), seen
    for name in SECRETS:  # the agent saw none of the values, not even as leaf's records redact them
        assert f"[secret {name}]" not in seen, name
    raw = Path(out["trajectory"]).read_text()
    for value in SECRETS.values():
        assert value not in stdout.decode() and value not in raw
    assert "LEAF_HOME" not in raw


def test_pass_env_lets_one_secret_in(git_repo: Path, tmp_path: Path, decoy: dict) -> None:
    out = run_fix(git_repo, tmp_path, "none", turn(call("Bash", command="echo $PGPASSWORD; echo x$GITHUB_TOKEN")),
                  {"content": "ok"}, env=decoy, extra=("--pass-env", "PGPASSWORD"))
    assert "pg-secret-1234\nx\n" in observations(out)[0]


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_secret_values_are_redacted_from_leafs_records_not_from_the_files(
        git_repo: Path, tmp_path: Path, sandbox: str, decoy: dict) -> None:
    token, password = SECRETS["GITHUB_TOKEN"], SECRETS["PGPASSWORD"]
    (git_repo / "notes.txt").write_text(f"token={token}\n")  # the user's own file, holding a secret value
    leak = f"cat notes.txt; echo \"t=$GITHUB_TOKEN p=$PGPASSWORD\"; echo '{SECRETS['DATABASE_URL']}' >&2"
    turns = (turn(call("Bash", command=leak)), turn(call("Write", file_path="leak.txt", content=f"{token}\n")),
             {"content": f"done, the token is {token}"})
    spec = script(tmp_path / "s.jsonl", *turns)
    mine = tmp_path / "mine.jsonl"
    proc = leaf_process("fix", "--json", "--sandbox", sandbox, "--pass-env", "PGPASSWORD", "--trajectory", str(mine),
                        "--model", spec, "task", cwd=git_repo, env=decoy, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr.decode()
    out = json.loads(stdout)
    records = [stdout.decode(), Path(out["trajectory"]).read_text(), mine.read_text()]
    for record in records:
        for name, value in SECRETS.items():
            assert name == "PGPASSWORD" or value not in record, (name, record)
    first = observations(out)[0]
    # passed by --pass-env: the user's explicit choice, so it is recorded as the agent saw it, unredacted
    assert "token=[secret GITHUB_TOKEN]" in first and f"t= p={password}" in first
    assert "[secret DATABASE_URL]" in first
    assert "[secret GITHUB_TOKEN]" in out["patch"] and "[secret GITHUB_TOKEN]" in records[1]
    assert (git_repo / "notes.txt").read_text() == f"token={token}\n"  # the work tree keeps its bytes
    assert (git_repo / "leak.txt").read_text() == f"{token}\n"
    # replay redacts the live observations the same way before comparing and printing them; it differs here
    # only where it must: no --pass-env on replay, and Write's recorded argument is now the marker itself
    again = leaf("replay", out["trajectory"], env=decoy)
    assert "now: Exit code: 0\nSTDOUT:\ntoken=[secret GITHUB_TOKEN]\nt= p=\n" in again.stderr, again.stderr
    assert "2 differ" in again.stderr and token not in again.stderr


@pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap missing")
def test_agent_cannot_forge_leafs_json_on_stdout(git_repo: Path, tmp_path: Path) -> None:
    """The gate refuses a write to /proc/$PPID/fd/1, so the forge is hidden from it (a path built at run
    time): the sandbox alone keeps leaf's stdout. Without it, as root (non-dumpable does not stop root),
    the same command lands its line in leaf's JSON output; as another user it is refused."""
    forge = ("f=/proc/$PPID/fd; f=$f/1; echo '{\"exit_reason\": \"forged\"}' > $f && echo landed; "
             "t=/dev; echo '{\"forged\": 1}' > $t/tty; echo ran")
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command=forge)), {"content": "ok"})
    for sandbox in ("none", "auto"):
        proc = leaf_process("fix", "--json", "--sandbox", sandbox, "--model", spec, "task", cwd=git_repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        stdout, _ = proc.communicate(timeout=120)
        lines = stdout.decode().splitlines()
        if sandbox == "none":
            assert (lines[0] == '{"exit_reason": "forged"}') == (os.geteuid() == 0), lines
            continue
        assert len(lines) == 1 and json.loads(lines[0])["exit_reason"] == "final_answer"
        assert "\nran\n" in observations(json.loads(lines[0]))[0]


def test_model_text_cannot_drive_the_terminal(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command="printf 'a\\033[8mhidden\\033[0m'"),
                                            content="\x1b]0;owned\x07\x1b[8mhidden"),
                  {"content": "done \x1b[2J\x1b[31mred\r", "reasoning_content": "\x1b[8mthink"})
    result = leaf("fix", "--json", "--workdir", str(git_repo), "--model", spec, "task")
    assert result.exit_code == 0 and "\x1b" not in result.stderr and "\r" not in result.stderr
    assert "hidden" in result.stderr  # the text is shown, only the sequences are gone


def test_gate_reads_every_path_argument_and_survives_a_nul_byte(git_repo: Path, tmp_path: Path) -> None:
    out = run_fix(git_repo, tmp_path, "none",
                  turn(call("Write", file_path="", path=".git/hooks/pre-commit", content="#!/bin/sh\n")),
                  turn(call("Write", file_path="a\x00b", content="x")),
                  turn(call("Bash", command="git -C ../other reset --hard")),
                  {"content": "ok"})
    seen = observations(out)
    assert seen[0].startswith("PermissionError: writing inside .git") and not (git_repo / ".git/hooks/pre-commit").exists()
    assert seen[1].startswith("PermissionError") and seen[2].startswith("PermissionError: git -C")
    assert out["exit_reason"] == "final_answer"


@pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap missing")
def test_replay_runs_under_the_sandbox(git_repo: Path, tmp_path: Path) -> None:
    state = Path(os.environ["LEAF_HOME"])
    out = run_fix(git_repo, tmp_path, "auto", turn(call("Bash", command=f"ls -A {state} | wc -l")), {"content": "ok"})
    assert observations(out)[0].startswith("Exit code: 0\nSTDOUT:\n0\n\nSTDERR:\n")
    result = leaf("replay", out["trajectory"])
    assert result.exit_code == 0 and "all observations match" in result.stderr


@pytest.mark.parametrize("bad", ['{"tool_calls": "Bash"}', '{"tool_calls": {"name": "Bash"}}', '{"tool_calls": ["x"]}'])
def test_malformed_replay_line_is_one_line_and_leaves_no_run(git_repo: Path, tmp_path: Path, bad: str) -> None:
    (tmp_path / "s.jsonl").write_text(bad + "\n")
    result = leaf("fix", "--json", "--workdir", str(git_repo), "--model", f"replay:{tmp_path / 's.jsonl'}", "task")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1 and "s.jsonl:1" in result.stderr
    assert "No runs" in leaf("runs", "--workdir", str(git_repo)).stdout


def test_internal_error_ends_the_run_with_a_record(git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import leaf_cli.agent.episode as episode

    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(episode, "run_episode", broken)
    monkeypatch.setattr("leaf_cli.agent.run_episode", broken)
    spec = script(tmp_path / "s.jsonl", {"content": "ok"})
    result = leaf("fix", "--json", "--workdir", str(git_repo), "--model", spec, "task")
    assert result.exit_code == 2 and "internal error (RuntimeError: boom)" in result.stderr
    listing = leaf("runs", "--workdir", str(git_repo)).stdout
    assert "kept" in listing and "error" in listing and "running" not in listing


def test_sigterm_during_the_final_snapshot_still_writes_the_record(git_repo: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from leaf_cli.repo import lifecycle

    run = lifecycle.begin_run(git_repo, title="t")
    real = lifecycle.finish_run

    def signalled(record: object, reason: str) -> str:
        os.kill(os.getpid(), signal.SIGTERM)  # lands inside the snapshot
        time.sleep(0.1)
        return real(record, reason)  # type: ignore[arg-type]

    monkeypatch.setattr(lifecycle, "finish_run", signalled)
    previous = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        with pytest.raises(KeyboardInterrupt):
            lifecycle.end_run_anyhow(run, "final_answer")
    finally:
        signal.signal(signal.SIGTERM, previous)
        lifecycle.release_run(run)
    saved = json.loads((run.folder / "run.json").read_text())
    assert saved["status"] == "kept" and saved["after"] is not None


def test_second_fix_is_refused_and_undo_of_a_live_run_says_why(git_repo: Path, tmp_path: Path) -> None:
    spec = script(tmp_path / "s.jsonl", turn(call("Bash", command="echo go > started.txt; sleep 60")), {"content": "ok"})
    proc = leaf_process("fix", "--json", "--sandbox", "none", "--model", spec, "wait", cwd=git_repo,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (git_repo / "started.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        second = leaf("fix", "--json", "--workdir", str(git_repo), "--model", script(tmp_path / "t.jsonl", {"content": "x"}), "t")
        assert second.exit_code == 2 and "another leaf run is working in this repository" in second.stderr
        refused = leaf("undo", "--workdir", str(git_repo), "--force")
        assert refused.exit_code == 2 and "is still running" in refused.stderr and str(proc.pid) in refused.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    listing = leaf("runs", "--workdir", str(git_repo)).stdout
    assert "interrupted" in listing and "running" not in listing
    assert leaf("undo", "--workdir", str(git_repo)).exit_code == 0


def test_max_time_stops_the_rest_of_a_turn(git_repo: Path, tmp_path: Path) -> None:
    calls = [call("Bash", command=f"sleep 1.1; echo {n} > {n}.txt") for n in ("a", "b", "c")]
    code, out = fix_json(git_repo, script(tmp_path / "s.jsonl", turn(*calls), {"content": "ok"}), "--max-time", "1", "t")
    assert code == 1 and out["exit_reason"] == "max_time"
    assert (git_repo / "a.txt").exists() and not (git_repo / "b.txt").exists() and not (git_repo / "c.txt").exists()


@pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap missing")
def test_sandbox_keeps_background_jobs_across_calls_and_ends_them_with_the_episode(git_repo: Path, tmp_path: Path) -> None:
    """One sandbox per episode: a job started in one call is alive in the next (as without a sandbox, as in
    FrogNano's harness), and gone when the run ends."""
    start = "nohup bash -c 'while true; do date +%s%N > tick.txt; sleep 0.05; done' >/dev/null 2>&1 & echo started"
    check = "a=$(cat tick.txt); sleep 0.3; b=$(cat tick.txt); test \"$a\" != \"$b\" && echo alive; echo tmp > /tmp/kept"
    out = run_fix(git_repo, tmp_path, "auto", turn(call("Bash", command=start)), turn(call("Bash", command=check)),
                  turn(call("Bash", command="cat /tmp/kept")), {"content": "ok"})
    seen = observations(out)
    assert "alive" in seen[1] and seen[2].startswith("Exit code: 0\nSTDOUT:\ntmp\n")
    last = (git_repo / "tick.txt").read_text()
    time.sleep(0.4)
    assert (git_repo / "tick.txt").read_text() == last, "the episode's background job outlived the run"


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_linked_worktree_run_can_commit_and_undo_restores_it(tmp_path: Path, sandbox: str) -> None:
    main = messy_repo(tmp_path / "work")
    sh(main, "git worktree add -q ../linked -b linked feature")
    linked = tmp_path / "linked"
    before, main_before = fingerprint(linked), fingerprint(main)
    agent = "echo x > x.txt && git add x.txt && git -c user.name=a -c user.email=a@b commit -qm agent && echo committed"
    out = run_fix(linked, tmp_path, sandbox, turn(call("Bash", command=agent)), {"content": "ok"})
    assert "committed" in observations(out)[0]
    undo(linked)
    assert fingerprint(linked) == before and fingerprint(main) == main_before


def test_missing_bubblewrap_is_one_line_before_any_checkpoint(git_repo: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))  # git, but no bwrap on this PATH
    spec = script(tmp_path / "s.jsonl", {"content": "ok"})
    result = leaf("fix", "--json", "--workdir", str(git_repo), "--model", spec, "--sandbox", "bwrap", "task",
                  env={"PATH": str(bin_dir)})
    assert result.exit_code == 2 and "install bubblewrap" in result.stderr and "--sandbox none" in result.stderr
    assert "No runs" in leaf("runs", "--workdir", str(git_repo)).stdout
