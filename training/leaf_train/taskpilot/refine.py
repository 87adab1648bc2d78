"""Refinement: move a statement toward the band. Below it: more behaviourally precise; above it: less
localizing. Procedural statements move one specificity level; llm statements are rewritten by the
generator model with the versioned prompts in training/prompts/. The code (and so its validation) is
unchanged: a refined candidate shares its parent's `code_key` and reuses that validation.
"""

from __future__ import annotations

from leaf_cli.llm.engine import Engine, Sampling
from leaf_cli.llm.messages import Conversation, Message
from leaf_train.taskpilot import prompts, statement
from leaf_train.taskpilot.candidate import Calibration, Candidate, Validation, digest


class CannotRefine(Exception):
    """No further step in the needed direction (already at the most or least specific level)."""


def write_statement(cand: Candidate, val: Validation, package: str, level: int) -> str:
    """The test-derived statement of a procedural (or combined) candidate at `level`."""
    meta = cand.meta
    return statement.write(package, val.observations, level, file=meta.get("file", ""),
                           function=meta.get("function", ""), secret_lines=meta.get("secret_lines", []))


def refine(cand: Candidate, val: Validation, package: str, direction: str, engine: Engine | None = None,
           cal: Calibration | None = None, band: tuple[float, float] = (0.0, 1.0)) -> Candidate:
    """The next round's candidate. `direction` is the calibration verdict: 'below' or 'above'; `cal` (the
    measurement that gave it) and `band` go into the llm refine prompt."""
    if cand.generator == "llm":
        if engine is None:
            raise CannotRefine("the llm generator refines with its model, and none is configured")
        text = llm_refine(cand.problem_statement, direction, val, engine, cal, band)
        level = cand.specificity
    else:
        level = (cand.specificity or 0) + (1 if direction == "below" else -1)
        if not 0 <= level <= statement.MAX_LEVEL:
            raise CannotRefine(f"already at specificity {cand.specificity} and p̂ is {direction} the band")
        if level in cand.meta.get("tried_levels", []):
            raise CannotRefine(f"the band lies between specificity levels {cand.specificity} and {level}")
        text = write_statement(cand, val, package, level)
    tried = sorted({*cand.meta.get("tried_levels", []), *([cand.specificity] if cand.specificity is not None else [])})
    return cand.model_copy(update={"id": digest(cand.code_key(), text), "parent": cand.id, "round": cand.round + 1,
                                   "problem_statement": text, "specificity": level,
                                   "meta": {**cand.meta, "tried_levels": tried}})


def llm_refine(text: str, direction: str, val: Validation, engine: Engine, cal: Calibration | None = None,
               band: tuple[float, float] = (0.0, 1.0)) -> str:
    """One chat completion (no tools) with the refine prompt for `direction`; the reply is the statement.
    The prompt states the measured p̂ (solved of N), the band, and which way p̂ must move."""
    name = "refine_more_precise" if direction == "below" else "refine_less_localizing"
    failing = "\n".join(f"- {t}: {(m or '').splitlines()[0] if m else ''}" for t, m in list(val.observations.items())[:8])
    prompt = prompts.render(name, statement=text, failing_tests=failing, **measured(cal, band))
    conv = Conversation(messages=[Message(role="system", content=prompts.render("refine_system")),
                                  Message(role="user", content=prompt)])
    turn = engine.complete(conv, [], Sampling(temperature=0.3, max_tokens=1024, enable_thinking=False))
    return turn.content.strip() or text


def measured(cal: Calibration | None, band: tuple[float, float]) -> dict[str, object]:
    """The calibration figures the refine prompts quote."""
    solved, n = (cal.solved, cal.rollouts) if cal is not None else (0, 0)
    return {"solved": solved, "rollouts": n, "p_hat": f"{cal.p_hat:.2f}" if cal is not None else "unknown",
            "band_low": f"{band[0]:.2f}", "band_high": f"{band[1]:.2f}"}
