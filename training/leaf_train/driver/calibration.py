"""The policy GGUF TaskPilot calibrates with, held to the iteration's context window.

Calibration should run the policy under the budget RL and validation give it (rl.rollout.max_context),
and TaskPilot's llama.cpp policy opens a GGUF at its training context (8,192 for SmolLM2, where a tiny
model may ramble thousands of tokens a turn). So the driver hands it a copy whose `<arch>.context_length`
says the iteration's window: tensors and every other key byte for byte the same.
"""

from __future__ import annotations

from pathlib import Path


def context_capped_gguf(src: Path, n_ctx: int, dest: Path) -> Path:
    """`dest`: `src` with its context length set to min(n_ctx, the original). Written once, atomically."""
    import gguf

    if dest.is_file():
        return dest
    reader = gguf.GGUFReader(src)
    arch = str(reader.fields["general.architecture"].contents())
    key = f"{arch}.context_length"
    partial = dest.with_name(dest.name + ".partial")
    dest.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(partial, arch=arch, endianess=reader.endianess)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # the writer adds these itself
        value_type = field.types[0]
        sub_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        value = min(int(field.contents()), n_ctx) if field.name == key else field.contents()
        writer.add_key_value(field.name, value, value_type, sub_type=sub_type)
    for tensor in reader.tensors:
        writer.add_tensor_info(tensor.name, tensor.data.shape, tensor.data.dtype, tensor.data.nbytes, tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for tensor in reader.tensors:
        writer.write_tensor_data(tensor.data)
    writer.close()
    partial.rename(dest)
    return dest
