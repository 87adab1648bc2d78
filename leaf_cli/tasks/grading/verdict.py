"""The verdict on one patch for one task, shared by every grader (leaf's tests, the benchmarks' own
scripts in their images, reward verifiers)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from leaf_cli.tasks.grading.testrun import GOOD


class GradeResult(BaseModel):
    """The verdict on one patch for one task."""

    instance_id: str
    resolved: bool
    patch_applied: str = Field(description="An `Applied` value; `in_workspace` when a Harbor verifier graded the "
                                           "workspace itself, `by_verifier` when PatchEval's script applied it.")
    apply_log: str = ""
    restored: list[str] = Field(default_factory=list, description="Protected/hidden paths put back.")
    f2p: dict[str, str] = Field(default_factory=dict, description="FAIL_TO_PASS node id -> outcome.")
    p2p: dict[str, str] = Field(default_factory=dict, description="PASS_TO_PASS node id -> outcome.")
    exit_code: int | None = None
    infra_failure: str | None = Field(None, description="env_build, source, test_patch, no_report, no_tests, "
                                                        "no_reward, bad_reward, timeout, harness.")
    error: str | None = Field(None, description="Why it is unresolved beyond test outcomes.")
    test_seconds: float = 0.0
    sandbox: str = ""
    grader: str = Field("tests", description="tests, reward, swebench or swebench_pro.")
    reward: float | None = Field(None, description="The verifier's reward (reward-graded tasks).")
    rewards: dict[str, float] = Field(default_factory=dict, description="Every reward the verifier wrote "
                                      "(Harbor's keys; PatchEval's strict and poc).")
    log_path: str | None = Field(None, description="The grading log kept for image-graded tasks.")

    @property
    def f2p_passed(self) -> int:
        return sum(o in GOOD for o in self.f2p.values())

    @property
    def p2p_passed(self) -> int:
        return sum(o in GOOD for o in self.p2p.values())

    def p2p_kept(self, skip_ok: bool = False) -> int:
        """P2P tests that still pass (a skipped one counts only with `skip_ok`)."""
        return sum(o in GOOD or (skip_ok and o == "skipped") for o in self.p2p.values())

    @classmethod
    def infrastructure(cls, instance_id: str, grader: str, kind: str, error: str) -> "GradeResult":
        """The verdict when the machinery failed before a grade: unresolved, labelled `kind`, never dropped."""
        return cls(instance_id=instance_id, resolved=False, patch_applied="empty", infra_failure=kind,
                   error=error, grader=grader)

    def tests_pass(self, p2p_skip_ok: bool = False) -> bool:
        """Every F2P passed and every P2P passed (or was skipped, with `p2p_skip_ok`)."""
        return self.f2p_passed == len(self.f2p) and self.p2p_kept(p2p_skip_ok) == len(self.p2p)
