"""The llama.cpp engine on the real runtime with SmolLM2-135M: token log, prefix reuse, grammar, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.llm.engine import ContextOverflow, Sampling
from leaf_cli.llm.messages import Conversation, Message

pytestmark = pytest.mark.llama

GREEDY = Sampling(temperature=0.0, max_tokens=12)


@pytest.fixture(scope="module")
def engine(smollm2_path: Path) -> Any:
    from leaf_cli.llm.llamacpp import LlamaCppEngine

    return LlamaCppEngine(smollm2_path, n_ctx=2048)


def chat(text: str) -> Conversation:
    return Conversation(messages=[Message(role="system", content="You are a helpful assistant."),
                                  Message(role="user", content=text)])


def test_turns_after_the_first_evaluate_only_their_new_tokens(engine: Any, tools: list[dict[str, Any]]) -> None:
    conv = chat("List the files.")
    first = engine.complete(conv, tools[:1], GREEDY)
    log = conv.token_log
    assert first.usage.cached_tokens == 0 and first.usage.prompt_tokens + first.usage.completion_tokens == len(log.ids)
    assert log.ids[-len(first.token_ids):] == first.token_ids and log.mask[-len(first.token_ids):] == [1] * len(first.token_ids)
    before = list(log.ids)
    conv.append(first.to_message())
    conv.append(Message(role="tool", content="calc.py\ntest_calc.py", tool_call_id="c1", name="Glob"))
    second = engine.complete(conv, tools[:1], GREEDY)
    new_prompt = second.usage.prompt_tokens - len(before)
    assert conv.token_log.ids[:len(before)] == before  # append-only
    assert second.usage.cached_tokens == len(before) - 1  # all but the last sampled token (never evaluated)
    assert engine.last_evaluated == second.usage.prompt_tokens - second.usage.cached_tokens == new_prompt + 1
    tail = engine.llm.detokenize(conv.token_log.ids[len(before):second.usage.prompt_tokens], special=True).decode()
    closed = "" if first.finish_reason == "stop" else "<|im_end|>"  # a cut reply is closed by the prompt
    assert tail == closed + "\n<|im_start|>user\n<tool_response>\ncalc.py\ntest_calc.py\n</tool_response><|im_end|>\n<|im_start|>assistant\n"


def test_streaming_logprobs_and_determinism(engine: Any) -> None:
    seen: list[str] = []
    sampling = Sampling(temperature=0.8, top_k=40, max_tokens=16, seed=7)
    turn = engine.complete(chat("Name a colour."), [], sampling, lambda kind, text: seen.append(text))
    assert "".join(seen) == turn.raw_text
    assert len(turn.logprobs) == len(turn.token_ids) == turn.usage.completion_tokens
    assert all(lp <= 0.0 for lp in turn.logprobs) and any(lp < 0.0 for lp in turn.logprobs)
    again = engine.complete(chat("Name a colour."), [], sampling)
    assert again.token_ids == turn.token_ids and again.logprobs == turn.logprobs
    greedy = engine.complete(chat("Name a colour."), [], GREEDY)
    assert greedy.logprobs == [0.0] * len(greedy.token_ids)  # greedy is a point mass


def test_cut_reply_then_next_turn_closes_it(engine: Any) -> None:
    conv = chat("Write a long story about a cat.")
    turn = engine.complete(conv, [], Sampling(temperature=0.0, max_tokens=3))
    assert turn.finish_reason == "length" and len(turn.token_ids) == 3
    conv.append(turn.to_message())
    conv.append(Message(role="user", content="Stop."))
    size = len(conv.token_log.ids)
    engine.complete(conv, [], GREEDY)
    assert engine.llm.detokenize(conv.token_log.ids[size:size + 1], special=True) == b"<|im_end|>"


def test_context_overflow(smollm2_path: Path) -> None:
    from leaf_cli.llm.llamacpp import LlamaCppEngine

    small = LlamaCppEngine(smollm2_path, n_ctx=64)
    with pytest.raises(ContextOverflow, match="does not fit"):
        small.complete(chat("word " * 200), [], GREEDY)


def test_quantized_kv_cache(smollm2_path: Path) -> None:
    from leaf_cli.llm.llamacpp import LlamaCppEngine

    q8 = LlamaCppEngine(smollm2_path, n_ctx=512, kv_cache_type="q8_0")
    assert q8.complete(chat("Hi"), [], Sampling(temperature=0.0, max_tokens=4)).usage.completion_tokens > 0
    with pytest.raises(LeafError, match="unknown KV cache type"):
        LlamaCppEngine(smollm2_path, kv_cache_type="q3")


def test_grammar_forces_well_formed_calls(smollm2_path: Path, tools: list[dict[str, Any]], tmp_path: Path) -> None:
    from leaf_cli.llm.llamacpp import LlamaCppEngine
    from leaf_cli.tools import Workspace, run_tool_call

    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    forced = LlamaCppEngine(smollm2_path, n_ctx=2048, constrain_tools=True, tool_choice="required",
                            parallel_tool_calls=False)
    turn = forced.complete(chat("Read the file calc.py."), tools[:1], Sampling(temperature=0.0, max_tokens=96))
    assert turn.finish_reason == "stop" and turn.parse_error is None
    assert [c.name for c in turn.tool_calls] == ["Read"]
    assert isinstance(turn.tool_calls[0].arguments["file_path"], str)
    result = run_tool_call(turn.tool_calls[0], Workspace(tmp_path))
    assert result.text  # ran for real (a read or a clear error text for a wrong path)


@pytest.mark.parametrize("fmt", ["qwen_xml", "hermes"])
def test_grammar_accepts_exactly_well_formed_calls(engine: Any, tools: list[dict[str, Any]], fmt: str) -> None:
    import numpy as np

    from leaf_cli.llm.grammar import tool_call_grammar
    from leaf_cli.llm.llama_runtime import GrammarFilter
    from leaf_cli.llm.template import hermes_call

    call = ("<tool_call>\n<function=Read>\n<parameter=file_path>\na.py\n</parameter>\n<parameter=offset>\n3\n"
            "</parameter>\n</function>\n</tool_call>") if fmt == "qwen_xml" else hermes_call("Read", {"file_path": "a.py", "offset": 3})
    unknown_tool = call.replace("Read", "Delete", 1)
    missing_required = call.replace("file_path", "path") if fmt == "hermes" else call.replace("<parameter=file_path>\na.py\n</parameter>\n", "")

    def accepts(text: str, **options: Any) -> bool:
        grammar = GrammarFilter(engine.llm, tool_call_grammar(tools, fmt, **options))
        try:
            for token in engine.llm.tokenize(text.encode(), add_bos=False, special=False):
                if not grammar.valid(np.array([token]))[0]:
                    return False
                grammar.accept(token)
            return bool(grammar.valid(np.array([engine.llm.token_eos()]))[0])  # may the reply end here?
        finally:
            grammar.close()

    assert accepts(call, require_call=True) and accepts(call + "\n" + call, require_call=True)
    assert not accepts(call + "\n" + call, require_call=True, parallel=False)
    assert not accepts(unknown_tool, require_call=True) and not accepts(missing_required, require_call=True)
    assert not accepts("Reading.", require_call=True)
    assert accepts("Reading.\n\n" + call) and accepts("Plain answer, no call.")
    assert accepts("Thinking it over.\n</think>\n\n" + call, require_call=True, in_reasoning=True)


@pytest.mark.slow  # ~10 s alone, longer on a busy machine: three real turns of SmolLM2
def test_multi_turn_episode_on_a_git_repo(smollm2_path: Path, git_repo: Path) -> None:
    from leaf_cli.agent import Limits, run_episode
    from leaf_cli.llm.llamacpp import LlamaCppEngine
    from leaf_cli.tools import Workspace
    from leaf_cli.tools.glob import GLOB
    from leaf_cli.tools.read import READ

    forced = LlamaCppEngine(smollm2_path, n_ctx=4096, constrain_tools=True, tool_choice="required",
                            parallel_tool_calls=False)
    traj = run_episode("Read calc.py and find the bug.", forced, Workspace(git_repo), tools=(READ, GLOB),
                       sampling=Sampling(temperature=0.0, max_tokens=96), limits=Limits(max_turns=3))
    assert traj.exit_reason in ("max_turns", "loop"), traj.exit_message
    assert len(traj.turns) >= 2 and any(m.role == "tool" for m in traj.messages)
    log = traj.token_log
    for prev, turn in zip(traj.turns, traj.turns[1:]):
        new = turn.usage.prompt_tokens - (prev.usage.prompt_tokens + prev.usage.completion_tokens)
        assert new > 0
        assert turn.usage.cached_tokens == prev.usage.prompt_tokens + prev.usage.completion_tokens - 1
        assert turn.usage.prompt_tokens - turn.usage.cached_tokens == new + 1
    assert len(log.ids) == traj.turns[-1].usage.prompt_tokens + traj.turns[-1].usage.completion_tokens
    assert sum(log.mask) == sum(t.usage.completion_tokens for t in traj.turns)


def write_gguf(path: Path, arch: str) -> None:
    gguf = pytest.importorskip("gguf", reason="gguf-py is needed to write a test GGUF")
    import numpy as np

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_context_length(128)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_bad_model_files_give_one_line_leaf_errors(tmp_path: Path) -> None:
    from leaf_cli.llm.llamacpp import LlamaCppEngine

    (tmp_path / "html.gguf").write_text("<html>rate limited</html>")
    cases = {"missing.gguf": "model file not found", "html.gguf": "is not a GGUF model file"}
    for name, message in cases.items():
        with pytest.raises(LeafError, match=message):
            LlamaCppEngine(tmp_path / name)
    write_gguf(tmp_path / "alien.gguf", "alien-arch")
    with pytest.raises(LeafError, match="llama.cpp cannot load .* \\(architecture 'alien-arch'\\)") as info:
        LlamaCppEngine(tmp_path / "alien.gguf")
    assert "\n" not in str(info.value)


def test_amx_workaround_is_on_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from llama_cpp import llama_cpp as lib

    from leaf_cli.llm.llama_runtime import _model_params, extra_bufts_wanted

    with _model_params(extra_bufts=False):
        assert lib.llama_model_default_params().use_extra_bufts is False
    assert lib.llama_model_default_params().use_extra_bufts is True
    assert extra_bufts_wanted(None) is False
    monkeypatch.setenv("LEAF_LLAMA_EXTRA_BUFTS", "1")
    assert extra_bufts_wanted(None) is True and extra_bufts_wanted(False) is False
