"""A model manifest: one TOML file that says where a GGUF comes from and how to run it.

A GGUF either is published (`hf`: a file in a hub repository), ships in a Python package (`package`), lies
on disk (`path`), or is made on the user's machine from a hub repository's safetensors (`hf-safetensors`:
downloaded, converted with llama.cpp's own converter, quantized and verified by `leaf models pull`).

Built-in manifests ship in the wheel (`models/*.toml` at the repository root, packaged as
`leaf_cli/models/manifests/`); models the user adds are manifests of the same shape under the user data dir.
"""

from __future__ import annotations

import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from leaf_cli.errors import LeafError
from leaf_cli.llm.engine import Sampling

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"


class Source(BaseModel):
    """Where the GGUF file comes from: a hub repository (a GGUF file, or safetensors to convert), a file inside
    an installed Python package, or a path."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["hf", "hf-safetensors", "package", "path"] = Field(
        description="hf: a GGUF in a hub repo; hf-safetensors: a hub repo's safetensors, converted on pull; "
                    "package: pip package; path: local")
    repo: str | None = Field(None, description="hf, hf-safetensors: `owner/name` of the hub repository.")
    filename: str | None = Field(None, description="hf: the file inside the repository.")
    revision: str = Field("main", description="hf, hf-safetensors: branch, tag or commit.")
    quant: str = Field("q4_k_m", description="hf-safetensors: the llama.cpp quantization `pull` makes.")
    download_bytes: int | None = Field(None, gt=0, description="hf-safetensors: size of the files downloaded.")
    package: str | None = Field(None, description="package: the importable package that ships the file.")
    resource: str | None = Field(None, description="package: the file name inside the package folder.")
    path: str | None = Field(None, description="path: an absolute path to the GGUF file.")
    sha256: str | None = Field(None, pattern=SHA256_PATTERN, description="Expected sha256 (lower-case hex).")

    @model_validator(mode="after")
    def _fields_for_kind(self) -> "Source":
        needed = {"hf": ("repo", "filename"), "hf-safetensors": ("repo",), "package": ("package", "resource"),
                  "path": ("path",)}[self.kind]
        missing = [f for f in needed if not getattr(self, f)]
        if missing:
            raise ValueError(f"a source of kind {self.kind!r} needs {', '.join(missing)}")
        return self

    def describe(self) -> str:
        """One short human-readable line."""
        if self.kind == "hf":
            return f"hf:{self.repo}/{self.filename}@{self.revision}"
        if self.kind == "hf-safetensors":
            return f"hf:{self.repo}@{self.revision} (safetensors, converted to {self.quant.upper()} on pull)"
        if self.kind == "package":
            return f"package {self.package}: {self.resource}"
        return str(self.path)


class SamplingDefaults(BaseModel):
    """A model's recommended decoding settings; unset fields keep `Sampling`'s defaults."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    repeat_penalty: float | None = None
    max_tokens: int | None = None
    enable_thinking: bool | None = None

    def to_sampling(self) -> Sampling:
        return Sampling(**self.model_dump(exclude_none=True))


class Manifest(BaseModel):
    """One registry entry. `unverified` lists the fields nobody could check when the manifest was written."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, description="Short name used on the command line.")
    description: str = ""
    family: str = Field("", description="Model family, e.g. qwen3.5.")
    chat_format: str = Field(description="leaf's chat format name: qwen3.5, chatml, ...")
    hybrid: bool = Field(False, description="Recurrent/hybrid architecture: no KV rollback in llama.cpp.")
    architecture: str | None = Field(None, description="GGUF architecture the file must report (e.g. qwen35).")
    context_length: int = Field(gt=0, description="Context the model was trained or evaluated with.")
    n_ctx: int = Field(gt=0, description="Context window leaf opens by default.")
    size_bytes: int | None = Field(None, gt=0, description="Size of the GGUF file (for hf-safetensors: once made).")
    licence: str = ""
    card: str | None = Field(None, description="Model card file name next to the manifest.")
    unverified: list[str] = Field(default_factory=list)
    notes: str = ""
    source: Source
    sampling: SamplingDefaults = Field(default_factory=SamplingDefaults)
    builtin: bool = Field(False, exclude=True, description="Shipped with leaf (set by the loader, not the file).")

    @model_validator(mode="after")
    def _context(self) -> "Manifest":
        if self.n_ctx > self.context_length:
            raise ValueError(f"n_ctx {self.n_ctx} is larger than context_length {self.context_length}")
        return self


def parse_manifest(text: str, origin: str) -> Manifest:
    """Parse manifest TOML; any problem is one LeafError line naming the file and the field."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LeafError(f"broken model manifest {origin}: not valid TOML ({exc})") from None
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise LeafError(f"broken model manifest {origin}: {where}: {first['msg']}{more}") from None
