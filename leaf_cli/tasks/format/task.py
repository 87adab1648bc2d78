"""The task record: SWE-bench's columns with SWE-bench's meaning, plus leaf's optional fields.

One task a JSON line. `patch` is the gold fix, `test_patch` the hidden test change applied at grading,
FAIL_TO_PASS / PASS_TO_PASS exact pytest node ids (a list, or a JSON string of a list as SWE-bench ships
them). Unknown keys are kept and written back unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from leaf_cli.errors import LeafError

DEFAULT_PROTECTED_PATHS: tuple[str, ...] = (
    "tests/**", "test/**", "testing/**", "**/tests/**", "**/test_*.py", "**/*_test.py", "**/conftest.py",
    "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "noxfile.py",
)
"""What the model's patch may not change when a task names no `protected_paths`: tests and test config."""


class InstallConfig(BaseModel):
    """How to build the task's test environment (SWE-rebench's `install_config`)."""

    model_config = ConfigDict(extra="allow")

    python: str | None = Field(None, description="Python version, e.g. '3.11'; None = the interpreter running leaf.")
    pre_install: list[str] = Field(default_factory=list, description="Shell commands run first in the repo copy.")
    install: str | None = Field(None, description="Shell command run in the repo copy with the venv active.")
    pip_packages: list[str] = Field(default_factory=list, description="Extra requirements (pytest is always added).")
    reqs_path: list[str] | str | None = Field(None, description="Requirement files inside the repository.")
    test_cmd: str | None = Field(None, description="Kept for SWE-rebench compatibility; leaf runs pytest itself.")
    log_parser: str = Field("pytest_nodeid_json", description="How results are read; leaf reads its plugin's JSON.")


class Timeouts(BaseModel):
    """Seconds each phase may take."""

    model_config = ConfigDict(extra="allow")

    agent_s: float = Field(1800.0, description="The agent episode's wall-clock limit.")
    test_s: float = Field(600.0, description="One grading test run.")
    build_s: float = Field(1800.0, description="Building the environment.")


class Task(BaseModel):
    """One SWE-bench-compatible task. Required fields as SWE-bench; the rest are optional."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    instance_id: str
    repo: str = Field(description="A local git repository or a git bundle file (absolute, or relative to the "
                                  "task file), or a URL.")
    base_commit: str = Field(description="The start state the agent sees.")
    problem_statement: str
    patch: str = Field(description="The gold fix, a unified diff.")
    test_patch: str = ""
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    version: str = ""
    hints_text: str | None = None
    environment_setup_commit: str | None = None
    # leaf's optional fields
    source: dict[str, Any] | None = None
    bug_patch: str | None = Field(None, description="The diff clean -> buggy, when the bug was synthesized.")
    install_config: InstallConfig = Field(default_factory=InstallConfig)
    hidden_paths: list[str] = Field(default_factory=list, description="Globs removed from the agent's copy.")
    protected_paths: list[str] | None = Field(None, description="Globs the model's patch may not change.")
    timeouts: Timeouts = Field(default_factory=Timeouts)
    split: str | None = None
    validation: dict[str, Any] | None = None
    stats: dict[str, Any] | None = None

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_string_list(cls, value: Any) -> Any:
        """SWE-bench ships these as a JSON string of a list; accept both."""
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else []
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a JSON list of test ids ({exc.msg})") from None
        return value

    @property
    def protected(self) -> list[str]:
        """The protected globs in force: the task's own, or the default test paths."""
        return list(DEFAULT_PROTECTED_PATHS) if self.protected_paths is None else list(self.protected_paths)

    @property
    def tests(self) -> list[str]:
        """Every node id grading runs: F2P then P2P, without duplicates."""
        return list(dict.fromkeys([*self.FAIL_TO_PASS, *self.PASS_TO_PASS]))

    def repo_location(self, base_dir: Path | None) -> str:
        """`repo` as git can open it: URLs unchanged, relative paths resolved against the task file's folder."""
        if "://" in self.repo or self.repo.startswith("git@"):
            return self.repo
        path = Path(self.repo).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        return str(path.resolve())

    def to_json(self) -> str:
        """One JSON line; unknown keys kept, defaults the file did not have left out."""
        return json.dumps(self.model_dump(mode="json", exclude_unset=True), ensure_ascii=False)


class TaskLineError(BaseModel):
    """A line of a task file that could not be read: reported, and the other tasks still run."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class TaskFile(BaseModel):
    """What `load_tasks` read: the tasks, the lines it could not read, and the folder relative repos start from."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: Path
    tasks: list[Task]
    errors: list[TaskLineError]

    @property
    def base_dir(self) -> Path:
        return self.path.resolve().parent


def load_tasks(path: Path) -> TaskFile:
    """Read a task file. A missing file is a LeafError; a malformed line is recorded with its number."""
    path = Path(path)
    if not path.is_file():
        raise LeafError(f"task file not found: {path}")
    tasks: list[Task] = []
    errors: list[TaskLineError] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        message = None
        try:
            task = Task.model_validate_json(line)
            if task.instance_id in seen:
                message = f"duplicate instance_id {task.instance_id!r}"
        except ValidationError as exc:
            message = _describe(exc)
        if message is not None:
            errors.append(TaskLineError(path=str(path), line=number, message=message))
            continue
        seen.add(task.instance_id)
        tasks.append(task)
    return TaskFile(path=path, tasks=tasks, errors=errors)


def dump_tasks(tasks: list[Task], path: Path) -> None:
    """Write tasks as JSON lines (unknown keys kept)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(t.to_json() + "\n" for t in tasks), encoding="utf-8")


def _describe(exc: ValidationError) -> str:
    """One short line: not JSON at all, or which fields are wrong."""
    errors = exc.errors()
    if errors and errors[0]["type"] in ("json_invalid", "model_type"):
        return f"not a JSON object ({errors[0]['msg']})"
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'task'}: {e['msg']}" for e in errors[:4])
