"""Token sampling from raw logits, returning the behaviour log-probability of each sampled token.

The distribution mirrors llama.cpp's default chain as `Llama.generate` builds it: repetition penalty, top-k,
top-p and min-p (both on the untempered softmax), then temperature, then a draw. The log-probability recorded
is that of the sampled token under this final, renormalised distribution: exactly the behaviour policy μ
that RL importance ratios need. With a grammar, tokens the grammar rejects are removed *before* top-k (the
distribution is over grammar-valid tokens). Temperature 0 is greedy: a point mass, log-probability 0.0.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from leaf_cli.llm.engine import Sampling

ValidFn = Callable[[np.ndarray], np.ndarray]
"""Given candidate token ids, a boolean array: which ones the grammar accepts next."""


class TokenSampler:
    def __init__(self, sampling: Sampling, valid: ValidFn | None = None, penalty_window: int = 64) -> None:
        self.s = sampling
        self.valid = valid
        self.rng = np.random.default_rng(sampling.seed)
        self.recent: list[int] = []
        self.window = penalty_window

    def sample(self, logits: np.ndarray) -> tuple[int, float]:
        """(token id, its log-probability under the distribution it was drawn from)."""
        if self.s.temperature <= 0.0:
            logits = self._penalised(logits)
            ids = self._candidates(logits)
            token = int(ids[np.argmax(logits[ids])])
            return self._took(token), 0.0
        ids, q = self.distribution(logits)
        choice = int(self.rng.choice(len(ids), p=q))
        return self._took(int(ids[choice])), float(np.log(q[choice]))

    def verify(self, logits: np.ndarray, draft: int) -> tuple[int, float, bool]:
        """One speculative step against a deterministic draft token: (token, its log-probability, accepted).

        Speculative sampling's rejection rule (Leviathan et al. 2023; Chen et al. 2023) with a draft that is a
        point mass q = δ(draft): accept the draft with probability min(1, p(draft)/q(draft)) = p(draft), else
        draw from the residual max(0, p - q) renormalised, which is p without the draft. The token returned is
        distributed exactly as `sample`'s, so its log-probability is log p(token) either way. Greedy: the
        argmax, accepted when it is the draft.
        """
        if self.s.temperature <= 0.0:
            token, logprob = self.sample(logits)
            return token, logprob, token == draft
        ids, q = self.distribution(logits)
        at = np.flatnonzero(ids == draft)
        if len(at) and self.rng.random() < q[at[0]]:
            return self._took(draft), float(np.log(q[at[0]])), True
        residual = q.copy()
        if len(at):
            residual[at[0]] = 0.0
        choice = int(self.rng.choice(len(ids), p=residual / residual.sum()))
        return self._took(int(ids[choice])), float(np.log(q[choice])), False

    def distribution(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(candidate ids, their probabilities): the distribution the next token is drawn from (temperature > 0)."""
        logits = self._penalised(logits)
        ids = self._candidates(logits)
        ids = ids[np.argsort(-logits[ids], kind="stable")]
        x = logits[ids].astype(np.float64)
        p = _softmax(x)
        if self.s.top_p < 1.0:
            keep = int(np.searchsorted(np.cumsum(p), self.s.top_p) + 1)
            ids, x, p = ids[:keep], x[:keep], p[:keep]
        if self.s.min_p > 0.0:
            keep = max(1, int(np.count_nonzero(p >= self.s.min_p * p[0])))
            ids, x = ids[:keep], x[:keep]
        return ids, _softmax(x / self.s.temperature)

    def _took(self, token: int) -> int:
        if self.s.repeat_penalty != 1.0:
            self.recent = (self.recent + [token])[-self.window:]
        return token

    def _penalised(self, logits: np.ndarray) -> np.ndarray:
        if self.s.repeat_penalty == 1.0 or not self.recent:
            return logits
        out = logits.copy()
        seen = np.unique(np.asarray(self.recent))
        vals = out[seen]
        out[seen] = np.where(vals > 0, vals / self.s.repeat_penalty, vals * self.s.repeat_penalty)
        return out

    def _candidates(self, logits: np.ndarray) -> np.ndarray:
        """The top-k token ids (all when top_k is 0), among grammar-valid tokens when there is a grammar."""
        k = self.s.top_k if self.s.top_k > 0 else len(logits)
        if self.s.temperature <= 0.0:
            k = 1
        if self.valid is None:
            n = len(logits)
            return np.argpartition(logits, n - k)[n - k:] if k < n else np.arange(n)
        chunk = min(len(logits), max(64, 4 * k))
        n = len(logits)
        head = np.argpartition(logits, n - chunk)[n - chunk:] if chunk < n else np.arange(n)
        head = head[np.argsort(-logits[head], kind="stable")]
        found = [head[self.valid(head)]]
        if len(found[0]) < k and chunk < len(logits):  # rare: walk down the full ranking
            rest = np.argsort(-logits, kind="stable")[chunk:]
            for start in range(0, len(rest), 4096):
                block = rest[start:start + 4096]
                found.append(block[self.valid(block)])
                if sum(map(len, found)) >= k:
                    break
        ids = np.concatenate(found)[:k] if found else np.zeros(0, dtype=np.int64)
        if len(ids) == 0:
            raise RuntimeError("the grammar accepts no token here")
        return ids


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()
