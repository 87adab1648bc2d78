"""A stand-in for the Hugging Face hub's file endpoint, on loopback. The model hub cannot be reached from
leaf's test machines, so `leaf models pull` is tested against this (point `HF_ENDPOINT` at `url`).

It implements what `huggingface_hub.hf_hub_download` and `HfApi.model_info` use: `HEAD` and
`GET /{repo}/resolve/{revision}/{file}` with `ETag` (the content's sha256 for LFS files, the git blob sha1 for
the others, as the hub gives them), `X-Repo-Commit`, `Content-Length`, `Range` requests answered with 206, the
hub's `X-Error-Code` on 404, and `GET /api/models/{repo}/revision/{revision}?blobs=true` listing every file
with its size and checksums. It can cut the first GET of a file after N bytes, to exercise resuming, and can
advertise a wrong checksum, to exercise checksum rejection.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

COMMIT = "0123456789abcdef0123456789abcdef01234567"
_PATH = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<filename>.+)$")
_API = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)(?:/revision/(?P<revision>[^/]+))?$")
LFS_SUFFIXES = (".safetensors", ".gguf", ".bin")


def tiny_gguf(arch: str = "llama", context: int = 4096, padding: int = 0) -> bytes:
    """A well-formed GGUF v3 file without tensors (header and three metadata keys, then `padding` random bytes):
    it passes leaf's header checks, so it can stand in for a model file wherever nothing loads it."""

    def string(text: str) -> bytes:
        raw = text.encode()
        return struct.pack("<Q", len(raw)) + raw

    kvs = [string("general.architecture") + struct.pack("<I", 8) + string(arch),
           string("general.name") + struct.pack("<I", 8) + string("Tiny Test"),
           string(f"{arch}.context_length") + struct.pack("<I", 4) + struct.pack("<I", context)]
    head = b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs)
    head += bytes(-len(head) % 32)  # the tensor data starts at the next 32-byte boundary
    return head + os.urandom(padding)


@dataclass
class HubFile:
    content: bytes
    etag: str | None = None  # default: sha256 of content (LFS files), git blob sha1 (others)
    cut_first_get_after: int | None = None  # close the connection after this many bytes, once
    lfs: bool | None = None  # default: by file name, as the hub's .gitattributes does
    size: int | None = None  # the size the listing advertises (default: the content's)
    gets: list[str] = field(default_factory=list)  # the Range header of each GET ("" when none)

    def is_lfs(self, filename: str) -> bool:
        return self.lfs if self.lfs is not None else filename.endswith(LFS_SUFFIXES)

    def tag(self, filename: str = "x.gguf") -> str:
        if self.etag:
            return self.etag
        if self.is_lfs(filename):
            return hashlib.sha256(self.content).hexdigest()
        return hashlib.sha1(f"blob {len(self.content)}\0".encode() + self.content).hexdigest()

    def sibling(self, filename: str) -> dict[str, Any]:
        """The file as the hub's model_info(files_metadata=True) lists it."""
        size = self.size if self.size is not None else len(self.content)
        if self.is_lfs(filename):
            return {"rfilename": filename, "size": size, "blobId": hashlib.sha1(filename.encode()).hexdigest(),
                    "lfs": {"size": size, "sha256": self.tag(filename), "pointerSize": 134}}
        return {"rfilename": filename, "size": size, "blobId": self.tag(filename)}


class FakeHub:
    """`with FakeHub() as hub: hub.add("owner/repo", "f.gguf", data); os.environ["HF_ENDPOINT"] = hub.url`."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str], HubFile] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, repo: str, filename: str, content: bytes, **options: Any) -> HubFile:
        hub_file = HubFile(content, **options)
        self.files[(repo, filename)] = hub_file
        return hub_file

    def add_folder(self, repo: str, folder: Path) -> dict[str, HubFile]:
        """Serve every file of a checkpoint folder (top level) under `repo`."""
        return {p.name: self.add(repo, p.name, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()}

    def listing(self, repo: str) -> dict[str, Any]:
        files = sorted((name, f) for (r, name), f in self.files.items() if r == repo)
        return {"id": repo, "modelId": repo, "sha": COMMIT, "private": False,
                "siblings": [f.sibling(name) for name, f in files]}

    def __enter__(self) -> "FakeHub":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def do_GET(self) -> None:
            self._serve(body=True)

        def _serve(self, body: bool) -> None:
            repos = {repo for repo, _ in hub.files}
            api = _API.match(unquote(self.path.split("?")[0]))
            if api:
                if api["repo"] not in repos:
                    return self._error("RepoNotFound")
                return self._json(hub.listing(api["repo"]), body)
            match = _PATH.match(unquote(self.path.split("?")[0]))
            if not match or match["repo"] not in repos:
                return self._error("RepoNotFound")
            hub_file = hub.files.get((match["repo"], match["filename"]))
            if hub_file is None:
                return self._error("EntryNotFound")
            data, start = hub_file.content, 0
            ranged = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
            if body:
                hub_file.gets.append(self.headers.get("Range", ""))
            if ranged and body:
                start = int(ranged[1])
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            self.send_header("ETag", f'"{hub_file.tag(match["filename"])}"')
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            if not body:
                return
            cut = hub_file.cut_first_get_after
            if cut is not None and len(hub_file.gets) == 1:
                self.wfile.write(data[start:start + cut])
                self.wfile.flush()
                self.close_connection = True  # the client sees a body shorter than Content-Length
                return
            self.wfile.write(data[start:])

        def _json(self, data: dict[str, Any], body: bool) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            if body:
                self.wfile.write(raw)

        def _error(self, code: str) -> None:
            self.send_response(404)
            self.send_header("X-Error-Code", code)
            if code != "RepoNotFound":
                self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler
