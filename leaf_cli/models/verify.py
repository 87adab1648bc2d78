"""Check a GGUF that leaf made before it is registered: it loads, it is the architecture the manifest says (and
hybrid when it should be), it carries a chat template, and its next-token distributions on a few prompts are
close to a reference GGUF's (the unquantized conversion): greedy agreement and KL, reported.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from leaf_cli.errors import LeafError

PROMPTS = (
    "def add(a, b):\n    return",
    "The capital of France is",
    "<|im_start|>user\nRead calc.py and fix the failing test.<|im_end|>\n<|im_start|>assistant\n<think>\n",
    "Exit code: 1\nSTDOUT:\nFAILED test_calc.py::test_add - assert -1 == 5\n",
)
"""Short prompts of the kinds the agent sees: code, prose, the chat format, a tool observation."""


class Agreement(BaseModel):
    prompts: int
    top1_agree: int
    mean_kl: float
    max_kl: float


class VerifyReport(BaseModel):
    architecture: str
    hybrid: bool
    chat_template: bool
    agreement: Agreement | None = None

    def summary(self) -> str:
        parts = [f"loads as {self.architecture}", "hybrid" if self.hybrid else "not hybrid",
                 "chat template present" if self.chat_template else "no chat template"]
        if self.agreement:
            a = self.agreement
            parts.append(f"greedy next token agrees on {a.top1_agree}/{a.prompts} prompts, "
                         f"mean KL {a.mean_kl:.4f} (max {a.max_kl:.4f}) vs the unquantized conversion")
        return ", ".join(parts)


def next_token_logprobs(path: Path, prompts: tuple[str, ...] = PROMPTS) -> tuple[list[list[int]], np.ndarray]:
    """(token ids of each prompt, log-probabilities of the next token after each: prompts × vocab)."""
    llm, _info = _load(path)
    try:
        return _prompt_logprobs(llm, prompts)
    finally:
        llm.close()


def _prompt_logprobs(llm: Any, prompts: tuple[str, ...]) -> tuple[list[list[int]], np.ndarray]:
    ids = [llm.tokenize(p.encode(), add_bos=True, special=True) for p in prompts]
    return ids, np.stack([_logprobs(last_logits(llm, tokens)) for tokens in ids])


def last_logits(llm: Any, tokens: list[int]) -> np.ndarray:
    """llama.cpp's logits after evaluating `tokens` from an empty context (without `logits_all`, `Llama.scores`
    is not filled: read the last row from the context itself)."""
    import llama_cpp

    llm.reset()
    llm.eval(tokens)
    return np.ctypeslib.as_array(llama_cpp.llama_get_logits(llm.ctx), shape=(llm.n_vocab(),)).astype(np.float64)


def _logprobs(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


def agreement(reference: np.ndarray, candidate: np.ndarray) -> Agreement:
    """Greedy agreement and KL(reference ‖ candidate) of two sets of next-token log-probabilities."""
    kls = [float((np.exp(r) * (r - c)).sum()) for r, c in zip(reference, candidate)]
    agree = int(sum(int(r.argmax() == c.argmax()) for r, c in zip(reference, candidate)))
    return Agreement(prompts=len(kls), top1_agree=agree, mean_kl=sum(kls) / len(kls), max_kl=max(kls))


def verify_gguf(path: Path, *, architecture: str | None, hybrid: bool | None,
                reference: Path | None = None) -> VerifyReport:
    """Load `path` and check it; with `reference`, also compare their next-token distributions."""
    import llama_cpp

    llm, info = _load(path)
    try:
        report = VerifyReport(architecture=info.architecture, hybrid=bool(llama_cpp.llama_model_is_hybrid(llm.model)),
                              chat_template=bool(info.chat_template))
        got = _prompt_logprobs(llm, PROMPTS)[1] if reference is not None else None
    finally:
        llm.close()
    if architecture and report.architecture != architecture:
        raise LeafError(f"{path.name} is a {report.architecture!r} model, not {architecture!r}: the checkpoint "
                        "is not the architecture its manifest says")
    if hybrid is not None and report.hybrid != hybrid:
        raise LeafError(f"llama.cpp reports {path.name} as {'hybrid' if report.hybrid else 'not hybrid'}, "
                        f"but its manifest says {'hybrid' if hybrid else 'not hybrid'}")
    if not report.chat_template:
        raise LeafError(f"{path.name} has no chat template; the checkpoint's tokenizer files lack one")
    if reference is not None and got is not None:
        _ids, ref = next_token_logprobs(reference)
        report.agreement = agreement(ref, got)
        if not math.isfinite(report.agreement.mean_kl):
            raise LeafError(f"{path.name} gives non-finite next-token probabilities: the quantization is broken")
    return report


def _load(path: Path) -> tuple[Any, Any]:
    from leaf_cli.llm.llama_runtime import load_llama

    return load_llama(path, n_ctx=512)
