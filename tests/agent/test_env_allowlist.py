"""The agent's environment is an allowlist, and redaction covers every credential kept from it, never a path.

The attack tests run `leaf fix --model replay:` for real: a scripted agent prints its environment and a
user's file that holds the secret values, with and without the sandbox.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from leaf_cli.agent.secrets import Redactor, is_credential, scrub_env
from tests.cli.fixcli import call, leaf_process, script, turn

HAVE_BWRAP = shutil.which("bwrap") is not None
SANDBOXES = ["none", pytest.param("auto", marks=pytest.mark.skipif(not HAVE_BWRAP, reason="bubblewrap missing"))]
PAT = "github_pat_11AQ3ZKBI0x7RfWk2dLmNp_8sVtYzE4gHjK1mN5bQ6cR9wX2yZ3aB4cD5eF6gH7iJ8kL9mN0pQ1rS2"
HOOK = "https://hooks.slack.com/services/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"
CA = "/etc/ssl/certs/ca-certificates.crt"
HOSTILE = {"GITHUB_PAT": PAT, "SLACK_WEBHOOK_URL": HOOK, "AWS_CA_BUNDLE": CA, "DOCKER_HOST": "tcp://10.0.0.5:2375",
           "COMPANY_BUILD_FLAVOR": "internal"}


def test_only_allowlisted_variables_reach_the_agent() -> None:
    env = {"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "PYENV_ROOT": "/p",
           "VIRTUAL_ENV": "/v", "PIP_INDEX_URL": "https://pypi.example/simple", "CARGO_HOME": "/c", "https_proxy": "http://proxy:3128",
           "HTTP_PROXY": "http://user:hunter2pass@proxy:3128", "PIP_EXTRA_INDEX_URL": "https://u:pw-secret-9@pypi.corp/simple",
           "CARGO_REGISTRY_TOKEN": "cio-token-1234567", "LEAF_HOME": "/state", **HOSTILE}
    assert scrub_env(env) == {k: env[k] for k in ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "PYENV_ROOT", "VIRTUAL_ENV",
                                                  "PIP_INDEX_URL", "CARGO_HOME", "https_proxy")}
    assert scrub_env(env, ["github_pat", "COMPANY_BUILD_FLAVOR"])["GITHUB_PAT"] == PAT  # --pass-env, by name


@pytest.mark.parametrize("name,value", [
    ("GITHUB_PAT", PAT), ("SLACK_WEBHOOK_URL", HOOK), ("ANY_NAME", "ghp_R8x2Lq0w9ZkVb7Tn3Ys5Hd1Mf4Pc6Ja2Ke0G"),
    ("ANY_NAME", "xoxb-2468013579-1357924680-AbCdEfGhIjKl"), ("ANY_NAME", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("DISCORD", "https://discord.com/api/webhooks/112233445566/Qm9vX2Jhcl9iYXpfcXV1eF8xMjM0NTY3ODk"),
    ("DATABASE_URL", "postgres://app:pw@db/app"), ("MY_API_KEY", "short-key")])
def test_credentials_by_name_or_by_shape(name: str, value: str) -> None:
    assert is_credential(name, value)


@pytest.mark.parametrize("name,value", [
    ("AWS_CA_BUNDLE", CA), ("GOOGLE_APPLICATION_CREDENTIALS", "/home/u/key.json"), ("LEAF_HOME", "/state/leaf"),
    ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"), ("PIP_FIND_LINKS", "file:///opt/wheels"), ("PATH", "/a/b:/c/d"),
    ("CHOST", "x86_64-pc-linux-gnu"), ("NODE_OPTIONS", "--max-old-space-size=4096"), ("TERM", "xterm-256color"),
    ("INVOCATION_ID", "6f1c0e8a9b7d4c3e2f1a0b9c8d7e6f5a"), ("HOMEPAGE_URL", "https://example.com/docs/getting-started"),
    ("DESKTOP_SESSION", "ubuntu")])
def test_paths_and_ordinary_values_are_not_credentials(name: str, value: str) -> None:
    assert not is_credential(name, value)


def test_redaction_leaves_paths_and_covers_unnamed_tokens() -> None:
    redact = Redactor(HOSTILE)
    text = f"ca={CA} pat={PAT} hook={HOOK} flavor=internal"
    assert redact.text(text) == f"ca={CA} pat=[secret GITHUB_PAT] hook=[secret SLACK_WEBHOOK_URL] flavor=internal"


def _fix(repo: Path, tmp_path: Path, sandbox: str, env: dict[str, str], *extra: str) -> tuple[dict, str]:
    probe = "env | sort; echo ---; cat secrets.txt"
    turns = (turn(call("Bash", command=probe)), turn(call("Write", file_path="ca.cfg", content=f"cafile = {CA}\n")),
             {"content": "done"})
    spec = script(tmp_path / f"s-{len(extra)}.jsonl", *turns)
    proc = leaf_process("fix", "--json", "--sandbox", sandbox, *extra, "--model", spec, "task", cwd=repo, env=env,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr.decode()
    out = json.loads(stdout)
    return out, stdout.decode() + Path(out["trajectory"]).read_text()


def _first_observation(out: dict) -> str:
    return next(m["content"] for m in out["messages"] if m["role"] == "tool")


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_unnamed_secrets_stay_out_of_the_agent_and_leafs_records(git_repo: Path, tmp_path: Path, sandbox: str) -> None:
    (git_repo / "secrets.txt").write_text(f"{PAT}\n{HOOK}\n")  # the user's own file: the agent may read it
    env = {**HOSTILE}
    # the probe works: a variable let in by --pass-env shows in the agent's `env`, recorded as it saw it
    out, records = _fix(git_repo, tmp_path, sandbox, env, "--pass-env", "GITHUB_PAT")
    assert f"GITHUB_PAT={PAT}\n" in _first_observation(out)
    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=git_repo, check=True)
    (git_repo / "ca.cfg").unlink()
    out, records = _fix(git_repo, tmp_path, sandbox, env)
    seen = _first_observation(out)
    agent_env = seen.split("---")[0]
    for name in HOSTILE:
        assert f"\n{name}=" not in "\n" + agent_env, name
    assert PAT not in records and HOOK not in records  # redacted where the file's bytes came back
    assert "[secret GITHUB_PAT]\n[secret SLACK_WEBHOOK_URL]" in seen
    # a path is not a secret: the recorded patch and trajectory keep it, whatever the variable is called
    assert f"+cafile = {CA}" in out["patch"] and "[secret AWS_CA_BUNDLE]" not in records
    assert (git_repo / "secrets.txt").read_text() == f"{PAT}\n{HOOK}\n"
