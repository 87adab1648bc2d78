"""The executor's typed configuration: the `executor:` section of a config file, or `--ray ADDRESS`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from leaf_cli.errors import LeafError


class ExecutorConfig(BaseModel):
    """Which executor runs the work, and how a Ray one joins or starts its cluster."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["local", "ray"] = Field("local", description="local: threads in this process; ray: Ray tasks/actors.")
    address: str = Field("local", description=(
        "Ray only. `local` starts a cluster in this process (stopped at exit); `auto` joins the cluster `ray start` "
        "runs on this machine; `ray://HOST:10001` connects through Ray Client; `HOST:6379` joins a head node."))
    num_cpus: int | None = Field(None, ge=1, description="A `local` cluster's CPUs (None: every core).")
    object_store_mb: int = Field(256, ge=64, description="A `local` cluster's object store (results are small).")
    dashboard: bool = Field(False, description="Start the Ray dashboard with a `local` cluster.")
    max_infra_retries: int = Field(2, ge=0, description=(
        "Times a job is re-run after its worker or node died under it (an infrastructure retry, counted and "
        "reported); past it the job is recorded as an infrastructure failure, never dropped."))
    cpus_per_job: float = Field(1.0, gt=0, description="CPUs a job reserves when its task names none.")
    gpus_per_worker: float = Field(0.0, ge=0, description=(
        "GPUs a pool worker reserves (an RL rollout actor holding a transformers engine on a GPU node; 0 for "
        "server-engine clients and CPU runs)."))
    image_memory_mb: int = Field(4096, ge=0, description=(
        "Memory an image task (SWE-bench, Pro, PatchEval) reserves when it names none; 0 = none."))
    sandbox_resources: dict[str, str] = Field(default_factory=dict, description=(
        "Sandbox name -> a custom Ray resource the job also asks 0.001 of (e.g. {docker: docker}, with "
        "`ray start --resources '{\"docker\": 1000}'` on the nodes that have Docker)."))
    worker_resources: dict[str, float] = Field(default_factory=dict, description=(
        "Custom Ray resources every pool worker asks for, to place RL rollout actors on chosen nodes "
        "(e.g. {sandbox: 0.01} for the nodes started with `--resources '{\"sandbox\": 1}'`)."))
    namespace: str = Field("leaf", description="The Ray namespace (named actors live in it).")

    @model_validator(mode="after")
    def _check(self) -> "ExecutorConfig":
        if self.kind == "ray":
            try:
                parse_ray_address(self.address)
            except LeafError as exc:  # pydantic reports a ValueError with the field's place
                raise ValueError(str(exc)) from None
        return self


def parse_ray_address(address: str) -> str | None:
    """What `ray.init(address=...)` takes: None for `local` (start one), the address otherwise."""
    if address == "local":
        return None
    if address == "auto" or address.startswith("ray://") or _host_port(address):
        return address
    raise LeafError(f"--ray {address!r}: give local, auto, ray://HOST:PORT or HOST:PORT")


def _host_port(address: str) -> bool:
    host, sep, port = address.rpartition(":")
    return bool(sep and host and port.isdigit())


def from_flag(ray: str | None, section: ExecutorConfig | None = None) -> ExecutorConfig:
    """`--ray ADDRESS` wins over the config's section; neither is the local executor."""
    if ray:
        parse_ray_address(ray)  # a bad address: one line, before anything starts
        base = section.model_dump() if section is not None else {}
        return ExecutorConfig.model_validate({**base, "kind": "ray", "address": ray})
    return section or ExecutorConfig()
