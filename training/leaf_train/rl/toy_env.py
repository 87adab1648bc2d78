"""A toy but real environment: one small git repository, one pytest test per task, graded by leaf's grader.

Each task asks for `answer.txt` with one word in it; its FAIL_TO_PASS test checks the file. "write" tasks
state the word; "copy" tasks put it in `notes/<task>.txt` for the agent to Read first. With `hint` the task
text spells out the exact tool call(s), so a 135M model can succeed sometimes at the start and RL can make it
reliable. Episodes run on a fresh single-commit copy of the repository; their `git diff` is graded by
`leaf_cli.tasks.grade` (fresh tree, tests restored, pytest by node id). `ToyEnvironment` is the RL loop's
environment over these tasks (`leaf_train.rl.environment`).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from leaf_cli.agent.prompt import SYSTEM_PROMPT
from leaf_cli.llm.messages import Conversation, Message
from leaf_cli.tasks import GradeResult, Sandbox, Task, git, grade, single_commit_repo, snapshot
from leaf_cli.tools import TOOLS, Tool, Workspace, find_tool
from leaf_train.rl.config import EnvConfig
from leaf_train.rl.environment import EpisodeStart, SeededTasks

WORDS = ("apple", "river", "stone", "cloud", "tiger", "maple", "ocean", "lemon", "piano", "candle", "forest",
         "silver", "rocket", "garden", "planet", "copper")


class ToyEnvironment(SeededTasks):
    """The toy tasks as an RL environment: only the tools the task kind needs (Write; Read and Write for
    copy), the optional solved example before the task, and leaf's grader."""

    def __init__(self, root: Path, cfg: EnvConfig, seed: int, sandbox: Sandbox) -> None:
        super().__init__(build_toy_tasks(root, cfg, seed), seed)
        self.cfg, self.sandbox = cfg, sandbox
        names = ("Write",) if cfg.task_kind == "write" else ("Read", "Write")
        self.tools: tuple[Tool, ...] = tuple(t for t in (find_tool(n, TOOLS) for n in names) if t is not None)

    def start(self, task: Task, scratch: Path) -> EpisodeStart:
        workdir = episode_workdir(task, scratch / "work")
        return EpisodeStart(workspace=Workspace(root=workdir), patch=lambda: workdir_patch(workdir),
                            conversation=demo_conversation(SYSTEM_PROMPT) if self.cfg.demo else None)

    def grade(self, task: Task, patch: str) -> GradeResult:
        return grade(task, patch, self.sandbox)


def build_toy_tasks(root: Path, cfg: EnvConfig, seed: int) -> list[Task]:
    """Create the repository under `root/repo` (once) and return its tasks."""
    rng = random.Random(seed)
    words = rng.sample(WORDS, k=min(cfg.num_tasks, len(WORDS)))
    repo = root / "repo"
    if not (repo / ".git").is_dir():
        repo.mkdir(parents=True, exist_ok=True)
        (repo / "README.md").write_text("Toy tasks: each asks for answer.txt with one word.\n", encoding="utf-8")
        for k, word in enumerate(words):
            (repo / "notes").mkdir(exist_ok=True)
            (repo / "notes" / f"task{k}.txt").write_text(word + "\n", encoding="utf-8")
            (repo / "tests").mkdir(exist_ok=True)
            (repo / "tests" / f"test_task{k}.py").write_text(
                "from pathlib import Path\n\n\ndef test_answer():\n"
                f"    assert Path('answer.txt').read_text().strip() == {word!r}\n", encoding="utf-8")
        git(["init", "-q", "-b", "main"], repo)
        git(["add", "-A"], repo)
        git(["commit", "-q", "-m", "toy tasks"], repo)
    base = git(["rev-parse", "HEAD"], repo).strip()
    return [_task(k, word, repo, base, cfg) for k, word in enumerate(words)]


def _task(k: int, word: str, repo: Path, base: str, cfg: EnvConfig) -> Task:
    write = {"name": "Write", "arguments": {"file_path": "answer.txt", "content": word}}
    if cfg.task_kind == "write":
        statement = f"Create the file answer.txt containing exactly the word {word}."
        hint = f"Reply with exactly this tool call:\n<tool_call>\n{json.dumps(write)}\n</tool_call>"
    else:
        statement = f"Read notes/task{k}.txt and write the word it holds into answer.txt."
        read = {"name": "Read", "arguments": {"file_path": f"notes/task{k}.txt"}}
        placeholder = {"name": "Write", "arguments": {"file_path": "answer.txt", "content": "WORD"}}
        hint = (f"First reply with exactly this tool call:\n<tool_call>\n{json.dumps(read)}\n</tool_call>\n"
                f"Then write the word you read, replacing WORD:\n<tool_call>\n{json.dumps(placeholder)}\n</tool_call>")
    gold = ("diff --git a/answer.txt b/answer.txt\nnew file mode 100644\n--- /dev/null\n+++ b/answer.txt\n"
            f"@@ -0,0 +1 @@\n+{word}\n")
    if cfg.name_tool:
        statement += " Use the Write tool." if cfg.task_kind == "write" else " Use the Read tool, then the Write tool."
    return Task(instance_id=f"toy-{cfg.task_kind}-{k}", repo=str(repo), base_commit=base,
                problem_statement=statement + ("\n" + hint if cfg.hint else ""), patch=gold,
                FAIL_TO_PASS=[f"tests/test_task{k}.py::test_answer"], version="toy",
                timeouts={"test_s": cfg.test_timeout})


def episode_workdir(task: Task, dest: Path) -> Path:
    """A fresh single-commit git repository holding the task's start state."""
    single_commit_repo(snapshot(task), dest, drop=task.hidden_paths)
    return dest


def workdir_patch(workdir: Path) -> str:
    """Everything the episode changed, untracked files included, as a binary-safe unified diff."""
    git(["add", "-A"], workdir)
    return git(["diff", "--cached", "--binary", "HEAD"], workdir)


def demo_conversation(system_prompt: str) -> Conversation:
    """A solved example before the real task: the model sees the call format once (prompt tokens only)."""
    call = {"name": "Write", "arguments": {"file_path": "example.txt", "content": "sunset"}}
    return Conversation(messages=[
        Message(role="system", content=system_prompt),
        Message(role="user", content="Create the file example.txt containing exactly the word sunset."),
        Message(role="assistant", content=f"<tool_call>\n{json.dumps(call)}\n</tool_call>"),
        Message(role="tool", content="Wrote example.txt (7 bytes).", name="Write"),
        Message(role="assistant", content="Done."),
    ])
