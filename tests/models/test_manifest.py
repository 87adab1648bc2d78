"""Manifests: the shipped ones are valid, broken ones fail with one line naming the file and the field."""

from __future__ import annotations

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.models.manifest import parse_manifest
from leaf_cli.models.registry import builtin_manifests, card_text

GOOD = """
name = "tiny"
chat_format = "chatml"
context_length = 4096
n_ctx = 2048
[source]
kind = "hf"
repo = "owner/repo"
filename = "tiny.gguf"
[sampling]
temperature = 0.3
"""


def test_shipped_manifests_are_the_three_entries_with_cards() -> None:
    manifests = builtin_manifests()
    assert sorted(manifests) == ["frognano-4b", "qwen3.5-4b", "smollm2-135m"]
    frog = manifests["frognano-4b"]
    # The real repositories, published as safetensors: converted on pull; only the size estimates are unverified.
    assert (frog.source.kind, frog.source.repo, frog.source.quant) == ("hf-safetensors", "microsoft/FrogNano-4B-2609",
                                                                       "q4_k_m")
    assert manifests["qwen3.5-4b"].source.repo == "Qwen/Qwen3.5-4B"
    assert frog.unverified == ["size_bytes", "source.download_bytes"] and frog.architecture == "qwen35"
    assert frog.licence == "MIT" and frog.hybrid and frog.n_ctx == 65536
    sampling = frog.sampling
    assert (sampling.temperature, sampling.top_p, sampling.top_k, sampling.min_p) == (0.6, 0.95, 20, 0.0)
    smol = manifests["smollm2-135m"]
    assert smol.source.kind == "package" and smol.source.sha256 and smol.size_bytes == 98362432
    assert all(m.builtin for m in manifests.values())
    for manifest in manifests.values():
        card = card_text(manifest)
        assert card is not None and card.startswith("# ")


def test_sampling_defaults_fill_a_sampling() -> None:
    manifest = parse_manifest(GOOD, "tiny.toml")
    sampling = manifest.sampling.to_sampling()
    assert sampling.temperature == 0.3 and sampling.top_p == 0.95  # unset fields keep leaf's defaults


@pytest.mark.parametrize("text, message", [
    ("name = [", "not valid TOML"),
    (GOOD.replace('chat_format = "chatml"\n', ""), "chat_format: Field required"),
    (GOOD.replace('kind = "hf"', 'kind = "ftp"'), "source.kind"),
    (GOOD.replace('repo = "owner/repo"\n', ""), "needs repo"),
    (GOOD.replace("n_ctx = 2048", "n_ctx = 9000"), "larger than context_length"),
    (GOOD + 'sha256 = "xyz"\n', "sampling.sha256"),
    (GOOD.replace("[sampling]", '[sampling]\nsha = 1\n[other]'), "(and 1 more)"),
    (GOOD.replace('name = "tiny"', 'name = "Bad Name"'), "name: String should match pattern"),
])
def test_broken_manifest_is_one_clear_line(text: str, message: str) -> None:
    with pytest.raises(LeafError) as info:
        parse_manifest(text, "models/tiny.toml")
    assert str(info.value).startswith("broken model manifest models/tiny.toml: ")
    assert message in str(info.value) and "\n" not in str(info.value)
