"""The 4B-shaped benchmark: FrogNano's pipeline and engine at Qwen3.5-4B's published size, in one command.

Speed and memory do not depend on the weights' values, so it builds a random-weight checkpoint of the real
topology (32 layers, 24 Gated DeltaNet + 8 gated attention, hidden 2560, FFN 9216, 16 heads, 4 KV heads of
256, linear attention 16 K / 32 V heads of 128, vocabulary 248,320, one MTP layer) with the tests' Qwen3.5
builder (`tests/support/tiny_qwen35.py`; the weights are streamed to disk one tensor at a time), then:

1. pulls it through `leaf models pull frognano-4b` from the loopback stand-in hub: each stage's time and the
   peak RSS of leaf and its children during it;
2. memory at 8k, 32k and 64k context with f16 and q8_0 KV: the peak RSS of a child that loads the model and
   evaluates a prompt, next to `leaf doctor`'s estimate from the GGUF header;
3. prompt and generation tokens/s of leaf's engine and of raw `llama_cpp.Llama` (same threads, batch and
   context), interleaved A B A B: medians and spreads (min-max);
4. the wall time of each turn of a 10-turn agent conversation (scripted tool results);
5. the cold start of a `leaf fix` to the first generated token: model load, prompt evaluation, first token;
   without and with the persistent prefix cache;
6. the prompt path: a sweep of n_batch, n_ubatch, threads and flash attention (prompt tokens/s), the ubatch at
   which prompt evaluation stops scaling, and what a recurrent-state checkpoint costs (bytes, save and restore
   time) next to the checkpoint budget the engine derives from the model;
7. prompt-lookup drafting on the hybrid: decode tokens/s with and without it, interleaved, the acceptance and
   whether the greedy tokens are identical (random weights accept little: this is the overhead at low
   acceptance).

Full size needs about 25 GB of free disk and about 40 minutes on 2 cores. `--shape tiny` runs every step on
the tests' tiny fixture shape in a minute or two (to check the script, not to measure).

Run: python bench/bench_4b.py [--shape 4b|tiny] [--threads N] [--keep DIR] [--gguf FILE] [--steps a,b,...]
(`--gguf` skips building and pulling and measures that file; `--steps` runs only the steps named, of
pull, memory, throughput, turns, cold, sweep, ubatch, checkpoints, speculate.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPE_4B: dict[str, Any] = {
    "hidden_size": 2560, "intermediate_size": 9216, "num_hidden_layers": 32,
    "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 8, "full_attention_interval": 4,
    "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32,
}
CONTEXTS = (8192, 32768, 65536)
KV_TYPES = ("f16", "q8_0")
REPEATS = 3


# -- the checkpoint ---------------------------------------------------------------------------------------------

def build(out: Path, shape: str) -> Path:
    """The checkpoint folder at `shape`: the tests' builder, with the weights streamed one tensor at a time."""
    from leaf_cli.models.converter import converter_dir
    from tests.support import tiny_qwen35 as q

    if shape == "4b":
        q.TEXT_CONFIG.update(SHAPE_4B)
    template = (ROOT / ".." / "shared" / "reference" / "qwen3_5.chat_template.jinja").read_text(encoding="utf-8")
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(q.config_json(), indent=2))
    q._write_generation_config(out)
    q._write_tokenizer(out, converter_dir() / "models" / "ggml-vocab-qwen2.gguf", template)
    _stream_weights(out, q)
    return out


def _stream_weights(out: Path, q: Any) -> None:
    """Two bf16 safetensors shards and their index, each tensor generated and written on its own (a 4B model
    held in memory at once would take 17 GB of float32)."""
    import numpy as np

    rng = np.random.default_rng(0)
    names = sorted(q.tensor_shapes().items())
    shards = [names[:len(names) // 2], names[len(names) // 2:]]
    weight_map, total = {}, 0
    for i, shard in enumerate(shards, start=1):
        file = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
        offset = 0
        for name, shape in shard:
            size = 2 * int(np.prod(shape))
            header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
            offset += size
        head = json.dumps(header, separators=(",", ":")).encode()
        head += b" " * (-len(head) % 8)
        with (out / file).open("wb") as f:
            f.write(len(head).to_bytes(8, "little") + head)
            for name, shape in shard:
                rows = shape[0] if len(shape) > 1 else 1
                step = max(1, (1 << 24) // max(1, int(np.prod(shape)) // rows))
                for start in range(0, rows, step):  # a few MB at a time
                    part = (min(step, rows - start), *shape[1:]) if len(shape) > 1 else shape
                    bits = np.ascontiguousarray(q._init(name, part, rng), dtype=np.float32).view(np.uint32)
                    f.write(((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes())
        total += offset
        weight_map.update({name: file for name, _ in shard})
    (out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))


# -- measuring helpers ------------------------------------------------------------------------------------------

def tree_rss(pid: int, skip: frozenset[int] = frozenset()) -> int:
    """Resident bytes of `pid` and all its descendants but `skip` and theirs (from /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            parents[int(entry.name)] = int(fields[1])
            rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, p in parents.items():
            if p == parent and child not in tree and child not in skip:
                tree.add(child)
                frontier.append(child)
    return sum(rss.get(p, 0) for p in tree)


class StagePeaks:
    """Samples the process tree's RSS in the background; the peak is kept per stage as `on_stage` names them."""

    def __init__(self, skip: frozenset[int] = frozenset()) -> None:
        self.skip = skip
        self.stage, self.started = "start", time.perf_counter()
        self.rows: list[list[Any]] = []  # [stage, seconds, peak bytes]
        self._peak, self._stop = 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> "StagePeaks":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.on_stage("done", "")
        self._stop.set()

    def on_stage(self, stage: str, _line: str) -> None:
        if stage == self.stage:
            return
        now = time.perf_counter()
        self.rows.append([self.stage, now - self.started, self._peak])
        self.stage, self.started, self._peak = stage, now, 0

    def _sample(self) -> None:
        while not self._stop.wait(0.25):
            self._peak = max(self._peak, tree_rss(os.getpid(), self.skip))


def spread(values: list[float], unit: str) -> str:
    return f"{statistics.median(values):.2f} {unit} ({min(values):.2f}-{max(values):.2f})"


# -- the steps --------------------------------------------------------------------------------------------------

HUB_CHILD = """
import sys
from pathlib import Path
from tests.support.fake_hub import FakeHub
from tests.support.tiny_qwen35 import REPO_ID
with FakeHub() as hub:
    hub.add_folder(REPO_ID, Path(sys.argv[1]))
    print(hub.url, flush=True)
    sys.stdin.read()
"""
"""The loopback hub, in a process of its own: it holds the checkpoint's files in memory (8.7 GB at this size),
which are not leaf's and stay out of the stage peaks."""


def pull_model(checkpoint: Path, home: Path) -> Path:
    from leaf_cli.models.pull import pull
    from leaf_cli.models.registry import get_manifest

    hub = subprocess.Popen([sys.executable, "-c", HUB_CHILD, str(checkpoint)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        url = hub.stdout.readline().strip() if hub.stdout else ""
        if not url.startswith("http"):
            raise SystemExit("the loopback hub did not start")
        with StagePeaks(skip=frozenset({hub.pid})) as peaks:
            os.environ.update(LEAF_HOME=str(home), HF_ENDPOINT=url, HF_HUB_CACHE=str(home / "hub-cache"))
            gguf = pull(get_manifest("frognano-4b"), on_stage=peaks.on_stage)
    finally:
        if hub.stdin:
            hub.stdin.close()
        hub.wait(timeout=60)
    print("\n== leaf models pull frognano-4b (loopback hub) ==")
    print(f"{'stage':10} {'time':>9} {'peak RSS':>10}")
    for stage, seconds, peak in peaks.rows[1:]:
        print(f"{stage:10} {seconds:8.1f}s {peak / 1e9:9.2f}G")
    print(f"GGUF: {gguf.name}, {gguf.stat().st_size / 2**30:.2f} GiB")
    return gguf


MEMORY_CHILD = """
import json, re, sys
from pathlib import Path
from leaf_cli.llm.llama_runtime import load_llama
llm, _ = load_llama(sys.argv[1], n_ctx=int(sys.argv[2]), kv_cache_type=sys.argv[3])
llm.eval(llm.tokenize(b"def f(x):\\n    return x\\n" * 40))
# VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec from the process that forked this one
peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", Path("/proc/self/status").read_text()).group(1)) * 1024
print(json.dumps({"peak": peak}))
"""


def memory(gguf: Path) -> None:
    from leaf_cli.llm.gguf_info import read_gguf_info
    from leaf_cli.models.memory import estimate

    info = read_gguf_info(gguf)
    print("\n== memory: peak RSS of a process that loads the model and evaluates a prompt ==")
    print(f"{'context':>8} {'kv':>5} {'peak RSS':>9} {'estimate':>9}")
    for ctx in CONTEXTS:
        for kv in KV_TYPES:
            proc = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(gguf), str(ctx), kv], capture_output=True,
                                  text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=1800)
            guess = estimate(info, ctx, kv)
            if proc.returncode != 0:
                print(f"{ctx:8} {kv:>5} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1][:100]}")
                continue
            peak = json.loads(proc.stdout.strip().splitlines()[-1])["peak"]
            print(f"{ctx:8} {kv:>5} {peak / 1e9:8.2f}G {guess.total / 1e9 if guess else float('nan'):8.2f}G")


@contextlib.contextmanager
def timed_prompt(engine: Any) -> Iterator[dict[str, float]]:
    """The seconds the engine spends evaluating prompt tokens (its `_evaluate`) inside the block."""
    timed = {"seconds": 0.0}
    evaluate: Callable[..., int] = engine._evaluate

    def timed_evaluate(*args: Any, **kwargs: Any) -> int:
        started = time.perf_counter()
        try:
            return evaluate(*args, **kwargs)
        finally:
            timed["seconds"] += time.perf_counter() - started

    engine._evaluate = timed_evaluate
    try:
        yield timed
    finally:
        del engine._evaluate  # the class's method again


def throughput(gguf: Path, threads: int) -> None:
    """Prompt and generation tokens/s, leaf's engine and raw llama_cpp.Llama, interleaved; each with llama.cpp's
    extra (REPACK) buffer types as its default has them and with the other choice, since they trade prompt
    speed against generation speed on some CPUs."""
    from llama_cpp import Llama

    from leaf_cli.llm.engine import Sampling
    from leaf_cli.llm.llama_runtime import extra_bufts_wanted, load_llama
    from leaf_cli.llm.llamacpp import LlamaCppEngine
    from leaf_cli.llm.messages import Conversation, Message

    ours = extra_bufts_wanted(None)
    leafs = {f"leaf (extra bufts {'on' if ours else 'off'}, its default)": LlamaCppEngine(gguf, n_ctx=8192, n_threads=threads),
             f"leaf (extra bufts {'off' if ours else 'on'})": LlamaCppEngine(gguf, n_ctx=8192, n_threads=threads,
                                                                         extra_bufts=not ours)}
    raws = {"raw (extra bufts on, its default)": Llama(model_path=str(gguf), n_ctx=8192, n_batch=512,
                                                        n_threads=threads, verbose=False),
            "raw (extra bufts off)": load_llama(gguf, n_ctx=8192, n_threads=threads, extra_bufts=False)[0]}
    text = "def handler_%d(event):\n    return event.get('value', 0) + %d\n"
    body = "".join(text % (i, i) for i in range(40))
    gen = 32

    def leaf_run(leaf: Any) -> tuple[float, float]:
        """A fresh prompt (a unique first line: nothing reusable), then the same prompt decoded `gen` tokens."""
        message = Message(role="user", content=f"# run {time.perf_counter()}\n{body}")
        started = time.perf_counter()
        leaf.complete(Conversation(messages=[message]), [], Sampling(temperature=0.0, max_tokens=1))
        prompt_rate = leaf.last_evaluated / (time.perf_counter() - started)
        started = time.perf_counter()
        with timed_prompt(leaf) as prompt:  # the reused prompt's few tail tokens are not generation
            reply = leaf.complete(Conversation(messages=[message]), [], Sampling(temperature=0.0, max_tokens=gen))
        return prompt_rate, reply.usage.completion_tokens / (time.perf_counter() - started - prompt["seconds"])

    def raw_run(raw: Any) -> tuple[float, float]:
        return raw_rates(raw, raw.tokenize(f"# run {time.perf_counter()}\n{body}".encode()), gen)

    runs: dict[str, Callable[[], tuple[float, float]]] = {}
    for (rn, raw), (ln, leaf) in zip(raws.items(), leafs.items()):
        runs[rn] = lambda raw=raw: raw_run(raw)
        runs[ln] = lambda leaf=leaf: leaf_run(leaf)
    rates: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for _ in range(REPEATS):
        for name, run in runs.items():
            rates[name].append(run())
    print(f"\n== prompt and generation, {threads} threads, {REPEATS} runs each, interleaved ==")
    for name, values in rates.items():
        print(f"{name:36} prompt {spread([v[0] for v in values], 'tok/s')}   "
              f"generation {spread([v[1] for v in values], 'tok/s')}")
    med = {name: [statistics.median(v[i] for v in values) for i in (0, 1)] for name, values in rates.items()}
    raw_default, leaf_default = list(med.values())[:2]
    print(f"leaf / raw, each as it comes: prompt {leaf_default[0] / raw_default[0]:.3f}, generation "
          f"{leaf_default[1] / raw_default[1]:.3f} (target >= 0.97)")
    same = {name: rates for name, rates in med.items() if ("on" in name) == ours}
    (_, a), (_, b) = [(n, r) for n, r in same.items() if n.startswith("leaf")][0], [(n, r) for n, r in same.items() if n.startswith("raw")][0]
    print(f"leaf / raw, both with extra bufts {'on' if ours else 'off'}: prompt {a[0] / b[0]:.3f}, generation {a[1] / b[1]:.3f}")


def ten_turns(gguf: Path, threads: int) -> None:
    from leaf_cli.agent.prompt import SYSTEM_PROMPT
    from leaf_cli.llm.engine import Sampling
    from leaf_cli.llm.llamacpp import LlamaCppEngine
    from leaf_cli.llm.messages import Conversation, Message
    from leaf_cli.tools import tool_schemas

    engine = LlamaCppEngine(gguf, n_ctx=16384, n_threads=threads)
    c = Conversation(messages=[Message(role="system", content=SYSTEM_PROMPT),
                               Message(role="user", content="add() in calc.py subtracts; fix it.")])
    print("\n== a 10-turn conversation: wall time per turn (scripted tool results, 16 tokens per reply) ==")
    for turn in range(10):
        started = time.perf_counter()
        reply = engine.complete(c, tool_schemas(), Sampling(temperature=0.0, max_tokens=16))
        print(f"turn {turn + 1:2}: {time.perf_counter() - started:7.2f}s  evaluated {engine.last_evaluated:5} prompt tokens")
        c.append(reply.to_message())
        lines = "\n".join(f"{i}. def helper_{turn}_{i}(x):  # line {i}" for i in range(1, 30))
        c.append(Message(role="tool", content=f"src/m{turn}.py\n{lines}", tool_call_id="c", name="Read"))


def cold_start(gguf: Path, threads: int) -> None:
    from leaf_cli.agent.prompt import SYSTEM_PROMPT
    from leaf_cli.llm.engine import Sampling
    from leaf_cli.llm.llamacpp import LlamaCppEngine
    from leaf_cli.llm.messages import Conversation, Message
    from leaf_cli.tools import tool_schemas

    cache = Path(tempfile.mkdtemp(prefix="leaf-bench-4b-prefix-"))
    print("\n== cold start of `leaf fix` to the first token ==")
    for label in ("no prefix cache", "prefix cache, first run (saves)", "prefix cache, next run (loads)"):
        started = time.perf_counter()
        engine = LlamaCppEngine(gguf, n_ctx=65536, n_threads=threads, kv_cache_type="q8_0",
                                prefix_cache=None if label.startswith("no") else cache)
        loaded = time.perf_counter()
        c = Conversation(messages=[Message(role="system", content=SYSTEM_PROMPT),
                                   Message(role="user", content="add() in calc.py subtracts; fix it.")])
        with timed_prompt(engine) as prompt:
            engine.complete(c, tool_schemas(), Sampling(temperature=0.0, max_tokens=1))
        done = time.perf_counter()
        print(f"{label:32} load {loaded - started:6.2f}s  prompt {prompt['seconds']:7.2f}s "
              f"({engine.last_evaluated} tokens)  first token {done - loaded - prompt['seconds']:5.2f}s")


# -- the prompt path at this size -------------------------------------------------------------------------------

def _prompt(llm: Any, tokens: int) -> list[int]:
    """A prompt of exactly `tokens` tokens, unique per call (nothing in the context can be reused)."""
    line = "def handler_%d(event):\n    return event.get('value', 0) + %d\n"
    ids = llm.tokenize(f"# {time.perf_counter()}\n".encode() + "".join(line % (i, i) for i in range(tokens)).encode())
    return ids[:tokens]


def _rates(gguf: Path, tokens: int, generate: int = 0, **settings: Any) -> tuple[float, float]:
    """(prompt tokens/s, generation tokens/s) of a fresh context with these llama.cpp settings: a `tokens`
    prompt, then `generate` greedy tokens one at a time (0: prompt only). The file stays in the page cache."""
    from leaf_cli.llm.llama_runtime import load_llama

    llm, _ = load_llama(gguf, n_ctx=4096, **settings)
    try:
        llm.eval(_prompt(llm, 16))  # warm-up: the first eval pays for buffer allocation
        return raw_rates(llm, _prompt(llm, tokens), generate)
    finally:
        llm.close()


def raw_rates(llm: Any, ids: list[int], generate: int) -> tuple[float, float]:
    """(prompt tokens/s, generation tokens/s) of plain llama-cpp-python on an emptied context: `Llama.eval` of
    the prompt, then `generate` greedy tokens one `eval` each (nan when 0)."""
    import numpy as np
    from llama_cpp import llama_cpp as lib

    from leaf_cli.llm.llama_runtime import kv_seq_rm

    llm.reset()
    kv_seq_rm(llm, 0, -1, seq_id=-1)
    started = time.perf_counter()
    llm.eval(ids)
    prompt_rate = len(ids) / (time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(generate):
        logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
        llm.eval([int(np.argmax(logits))])
    return prompt_rate, generate / (time.perf_counter() - started) if generate else float("nan")


def sweep(gguf: Path, threads: int, tokens: int, repeats: int) -> None:
    """One factor at a time around leaf's defaults (n_batch 512, n_ubatch 512, all threads, flash attention off,
    extra buffer types as `extra_bufts_wanted` decides here), each run beside a run of the default."""
    from leaf_cli.llm.llama_runtime import extra_bufts_wanted

    bufts = extra_bufts_wanted(None)
    default: dict[str, Any] = {"n_batch": 512, "n_ubatch": 512, "n_threads": threads, "flash_attn": False,
                               "extra_bufts": bufts}
    variants: list[dict[str, Any]] = [
        {"extra_bufts": not bufts}, {"n_threads": 1}, {"flash_attn": True},
        {"n_batch": 128, "n_ubatch": 128}, {"n_batch": 256, "n_ubatch": 256}, {"n_batch": 2048, "n_ubatch": 512},
        {"n_ubatch": 128}, {"n_ubatch": 256},
    ]
    print(f"\n== prompt path sweep: {tokens}-token prompts then 8 generated tokens, each setting beside the "
          f"default ({', '.join(f'{k}={v}' for k, v in default.items())}), {repeats} run(s) each ==")
    print(f"{'setting':34} {'prompt':>8} {'default':>8} {'ratio':>6}   {'gen':>6} {'default':>8} {'ratio':>6}")
    for variant in variants:
        ours, base = [], []
        for _ in range(repeats):
            base.append(_rates(gguf, tokens, 8, **default))
            ours.append(_rates(gguf, tokens, 8, **{**default, **variant}))
        p, bp = statistics.median(o[0] for o in ours), statistics.median(b[0] for b in base)
        g, bg = statistics.median(o[1] for o in ours), statistics.median(b[1] for b in base)
        label = ", ".join(f"{k}={v}" for k, v in variant.items())
        print(f"{label:34} {p:8.2f} {bp:8.2f} {p / bp:6.3f}   {g:6.2f} {bg:8.2f} {g / bg:6.3f}")


def ubatch_scaling(gguf: Path, threads: int, tokens: int) -> None:
    """Prompt tokens/s against the micro-batch size. The Gated DeltaNet layers process a micro-batch in chunks
    (llama.cpp's chunked delta rule), so past some size a larger ubatch buys no more speed; the attention and
    FFN matmuls keep gaining a little longer. The row where the gain falls under 10% is the knee."""
    print(f"\n== prompt tokens/s against n_ubatch ({tokens}-token prompts, n_batch {tokens}, {threads} threads) ==")
    previous = None
    for ubatch in (4, 16, 32, 64, 128, 256, 512):  # 1 is generation speed: minutes for one row
        if ubatch > tokens:
            break
        rate = _rates(gguf, tokens, n_batch=tokens, n_ubatch=ubatch, n_threads=threads)[0]
        gain = "" if previous is None else f"  x{rate / previous:.2f} over the row above"
        print(f"n_ubatch {ubatch:4}: {rate:8.2f} tok/s{gain}")
        previous = rate


def checkpoints(gguf: Path, threads: int) -> None:
    """What one recurrent-state checkpoint costs at this size, and the budget the engine derives from it."""
    from leaf_cli.llm.llamacpp import LlamaCppEngine

    engine = LlamaCppEngine(gguf, n_ctx=8192, n_threads=threads)
    llm, states = engine.llm, engine.states
    llm.eval(_prompt(llm, 64))
    saves, restores = [], []
    for _ in range(5):
        started = time.perf_counter()
        states.checkpoint()
        saves.append(time.perf_counter() - started)
        saved = states.checkpoints[-1]
        started = time.perf_counter()
        assert states.restore_checkpoint(saved)
        restores.append(time.perf_counter() - started)
        llm.eval(_prompt(llm, 4))  # the next position: a new checkpoint
    from llama_cpp import llama_cpp as lib

    whole = int(lib.llama_state_seq_get_size(llm.ctx, 0))
    print("\n== recurrent-state checkpoints ==")
    print(f"one checkpoint: {saved.size / 2**20:.2f} MiB (the whole sequence state at {llm.n_tokens} tokens: "
          f"{whole / 2**20:.2f} MiB); save {spread([s * 1e3 for s in saves], 'ms')}, "
          f"restore {spread([r * 1e3 for r in restores], 'ms')}")
    print(f"engine's checkpoint budget for this model: {states.checkpoint_bytes / 2**20:.0f} MiB "
          f"= {states.checkpoint_bytes // max(saved.size, 1)} checkpoints (max {states.max_checkpoints})")


def speculate(gguf: Path, threads: int) -> None:
    """Decode tokens/s of the hybrid with and without prompt-lookup drafting, interleaved."""
    from leaf_cli.llm.engine import Sampling
    from leaf_cli.llm.llamacpp import LlamaCppEngine
    from leaf_cli.llm.messages import Conversation, Message

    file = "".join(f"def scale_{i}(values):\n    return [v * {i} for v in values]\n\n" for i in range(12))

    def c() -> Conversation:  # a fresh one per call: a conversation's token log grows with each reply
        return Conversation(messages=[Message(role="user", content=f"scale.py:\n{file}\nWrite it back with `items`.")])

    engines = {"plain": LlamaCppEngine(gguf, n_ctx=4096, n_threads=threads, speculate=False),
               "draft": LlamaCppEngine(gguf, n_ctx=4096, n_threads=threads, speculate=True)}
    rates: dict[str, list[float]] = {k: [] for k in engines}
    tokens: dict[str, list[int]] = {}
    for _ in range(REPEATS):
        for name, engine in engines.items():
            engine.complete(c(), [], Sampling(temperature=0.0, max_tokens=1))  # the prompt, before the clock
            started = time.perf_counter()
            reply = engine.complete(c(), [], Sampling(temperature=0.0, max_tokens=64))
            rates[name].append(reply.usage.completion_tokens / (time.perf_counter() - started))
            tokens[name] = reply.token_ids
    d = engines["draft"]
    print(f"\n== prompt-lookup drafting on the hybrid, {threads} threads, {REPEATS} runs each, interleaved ==")
    for name, values in rates.items():
        print(f"{name:6} {spread(values, 'tok/s')}")
    print(f"draft / plain: {statistics.median(rates['draft']) / statistics.median(rates['plain']):.3f}; "
          f"drafting on: {d.speculate}; drafted {d.drafted}, accepted {d.accepted} "
          f"({d.accepted / max(d.drafted, 1):.0%}); identical tokens: {tokens['draft'] == tokens['plain']}")


STEPS = ("pull", "memory", "throughput", "turns", "cold", "sweep", "ubatch", "checkpoints", "speculate")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=("4b", "tiny"), default="4b")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--keep", type=Path, help="Work in this folder and leave it (default: a temporary one).")
    parser.add_argument("--gguf", type=Path, help="Measure this GGUF: no build, no pull.")
    parser.add_argument("--steps", default=",".join(STEPS), help="Comma-separated steps to run (default: all).")
    parser.add_argument("--sweep-tokens", type=int, default=256, help="Prompt length of the sweep (default 256).")
    parser.add_argument("--sweep-repeats", type=int, default=1, help="Runs of each sweep setting (default 1).")
    args = parser.parse_args()
    steps = set(args.steps.split(","))
    if steps - set(STEPS):
        parser.error(f"unknown steps: {', '.join(sorted(steps - set(STEPS)))}; choose from {', '.join(STEPS)}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="leaf-bench-4b-"))
    gguf = args.gguf
    if gguf is None:
        started = time.perf_counter()
        checkpoint = build(work / "FrogNano-4B-2609", args.shape)
        print(f"== shape {args.shape}: checkpoint built in {time.perf_counter() - started:.1f}s "
              f"({sum(p.stat().st_size for p in checkpoint.glob('*.safetensors')) / 1e9:.2f} GB of bf16) ==")
        gguf = pull_model(checkpoint, work / "home")
    small = args.shape == "tiny"
    for step, run in (("memory", lambda: memory(gguf)), ("throughput", lambda: throughput(gguf, args.threads)),
                      ("turns", lambda: ten_turns(gguf, args.threads)), ("cold", lambda: cold_start(gguf, args.threads)),
                      ("sweep", lambda: sweep(gguf, args.threads, 64 if small else args.sweep_tokens, args.sweep_repeats)),
                      ("ubatch", lambda: ubatch_scaling(gguf, args.threads, 64 if small else args.sweep_tokens)),
                      ("checkpoints", lambda: checkpoints(gguf, args.threads)),
                      ("speculate", lambda: speculate(gguf, args.threads))):
        if step in steps:
            run()
    if args.keep is None:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
