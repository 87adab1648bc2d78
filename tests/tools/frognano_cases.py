"""The tool calls of the differential against FrogNano's harness (`frognano/harness/leaf/tool_runner.py`).

Each case names a tool, its arguments and the files the workdir holds first. `frognano_observations.json`
holds, for every case, the observation FrogNano's harness returned for it (run from its public source in a
throwaway script, with the workdir as its cwd); `{root}` stands for the workdir and `{out}` for a folder
beside it. Texts over 2,000 chars are kept as their length, SHA-256, head and tail.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BIG_LINE = "0123456789abcdef" * 8  # 128 chars


@dataclass
class Case:
    id: str
    tool: str
    args: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)  # link path -> target (relative to the workdir)
    dirs: list[str] = field(default_factory=list)


def setup(case: Case, root: Path) -> None:
    """Lay out the case's files under `root` (and `{out}`, the folder beside it)."""
    out = root.parent / "out"
    out.mkdir(exist_ok=True)
    (out / "secret.txt").write_text("outside\n")
    for name in case.dirs:
        (root / name).mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for name, target in case.links.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path)


def fill(args: dict[str, Any], root: Path) -> dict[str, Any]:
    """The arguments with `{root}` and `{out}` replaced."""
    out = str(root.parent / "out")
    return {k: v.replace("{root}", str(root)).replace("{out}", out) if isinstance(v, str) else v
            for k, v in args.items()}


PY = {"a.py": b"x = 1\n", "b.py": b"y = 2\n", "src/c.py": b"z = 3\n", "src/deep/d.py": b"w\n", "README.md": b"# r\n"}
TEXT = {"f.txt": b"one\ntwo\nthree\nfour\nfive\n"}


def _read() -> list[Case]:
    c = [
        Case("read-plain", "Read", {"file_path": "f.txt"}, TEXT),
        Case("read-offset", "Read", {"file_path": "f.txt", "offset": 3}, TEXT),
        Case("read-limit", "Read", {"file_path": "f.txt", "limit": 2}, TEXT),
        Case("read-offset-limit", "Read", {"file_path": "f.txt", "offset": 2, "limit": 2}, TEXT),
        Case("read-offset-past-end", "Read", {"file_path": "f.txt", "offset": 99}, TEXT),
        Case("read-offset-zero", "Read", {"file_path": "f.txt", "offset": 0}, TEXT),
        Case("read-offset-negative", "Read", {"file_path": "f.txt", "offset": -4}, TEXT),
        Case("read-limit-zero", "Read", {"file_path": "f.txt", "limit": 0}, TEXT),
        Case("read-limit-negative", "Read", {"file_path": "f.txt", "limit": -1}, TEXT),
        Case("read-limit-past-end", "Read", {"file_path": "f.txt", "offset": 4, "limit": 50}, TEXT),
        Case("read-offset-string", "Read", {"file_path": "f.txt", "offset": "2"}, TEXT),
        Case("read-offset-empty-string", "Read", {"file_path": "f.txt", "offset": ""}, TEXT),
        Case("read-offset-garbage", "Read", {"file_path": "f.txt", "offset": "abc"}, TEXT),
        Case("read-offset-float", "Read", {"file_path": "f.txt", "offset": 2.0}, TEXT),
        Case("read-offset-null", "Read", {"file_path": "f.txt", "offset": None}, TEXT),
        Case("read-limit-list", "Read", {"file_path": "f.txt", "limit": [1]}, TEXT),
        Case("read-missing-file-bad-offset", "Read", {"file_path": "nope.txt", "offset": "abc"}),
        Case("read-empty-file", "Read", {"file_path": "e.txt"}, {"e.txt": b""}),
        Case("read-no-final-newline", "Read", {"file_path": "n.txt"}, {"n.txt": b"a\nb"}),
        Case("read-blank-lines", "Read", {"file_path": "n.txt"}, {"n.txt": b"a\n\n\nb\n\n"}),
        Case("read-crlf", "Read", {"file_path": "n.txt"}, {"n.txt": b"a\r\nb\r\n"}),
        Case("read-lone-cr", "Read", {"file_path": "n.txt"}, {"n.txt": b"a\rb\rc"}),
        Case("read-form-feed", "Read", {"file_path": "n.txt"}, {"n.txt": b"a\x0cb\x0bc\x1cd\n"}),
        Case("read-unicode-separators", "Read", {"file_path": "n.txt"}, {"n.txt": "a\u2028b\u2029c\x85d\n".encode()}),
        Case("read-bom", "Read", {"file_path": "n.txt"}, {"n.txt": b"\xef\xbb\xbfhello\nworld\n"}),
        Case("read-binary", "Read", {"file_path": "img.bin"}, {"img.bin": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"}),
        Case("read-latin1", "Read", {"file_path": "l.txt"}, {"l.txt": b"caf\xe9\nna\xefve\n"}),
        Case("read-missing", "Read", {"file_path": "missing.txt"}),
        Case("read-missing-nested", "Read", {"file_path": "no/such/dir/x.py"}),
        Case("read-directory", "Read", {"file_path": "src"}, PY),
        Case("read-dot", "Read", {"file_path": "."}, PY),
        Case("read-path-alias", "Read", {"path": "f.txt"}, TEXT),
        Case("read-no-path", "Read", {}),
        Case("read-empty-path", "Read", {"file_path": ""}),
        Case("read-absolute-inside", "Read", {"file_path": "{root}/f.txt"}, TEXT),
        Case("read-absolute-outside", "Read", {"file_path": "{out}/secret.txt"}),
        Case("read-dotdot-outside", "Read", {"file_path": "../out/secret.txt"}),
        Case("read-dotdot-inside", "Read", {"file_path": "src/../f.txt"}, {**TEXT, "src/x": b""}),
        Case("read-symlink-inside", "Read", {"file_path": "link.txt"}, TEXT, links={"link.txt": "f.txt"}),
        Case("read-symlink-outside", "Read", {"file_path": "out.txt"}, links={"out.txt": "../out/secret.txt"}),
        Case("read-dangling-symlink", "Read", {"file_path": "gone.txt"}, links={"gone.txt": "nothing"}),
        Case("read-file-as-dir", "Read", {"file_path": "f.txt/x"}, TEXT),
        Case("read-tilde", "Read", {"file_path": "~nosuchuser_leaf/x"}),
        Case("read-int-path", "Read", {"file_path": 7}, {"7": b"seven\n"}),
        Case("read-long-lines-truncated", "Read", {"file_path": "big.txt"}, {"big.txt": (BIG_LINE + "\n").encode() * 400}),
        Case("read-many-lines-truncated", "Read", {"file_path": "many.txt"}, {"many.txt": b"x\n" * 30000}),
        Case("read-many-lines-limit", "Read", {"file_path": "many.txt", "offset": 29990, "limit": 5}, {"many.txt": b"x\n" * 30000}),
        Case("read-exactly-at-cap", "Read", {"file_path": "cap.txt"}, {"cap.txt": b"y" * (20000 - len("cap.txt\n1. "))}),
        Case("read-one-over-cap", "Read", {"file_path": "cap.txt"}, {"cap.txt": b"y" * (20001 - len("cap.txt\n1. "))}),
        Case("read-large-file", "Read", {"file_path": "large.txt"}, {"large.txt": (BIG_LINE + "\x0c\r\n").encode() * 12000}),
        Case("read-large-file-tail", "Read", {"file_path": "large.txt", "offset": 23999, "limit": 3},
             {"large.txt": (BIG_LINE + "\u2028").encode() * 12000}),
        Case("read-large-one-line", "Read", {"file_path": "line.txt"}, {"line.txt": b"z" * (3 << 20)}),
        Case("read-large-past-end", "Read", {"file_path": "large.txt", "offset": 10 ** 6}, {"large.txt": b"q\n" * 700000}),
    ]
    return c


def _write() -> list[Case]:
    return [
        Case("write-new", "Write", {"file_path": "new.txt", "content": "hello\n"}),
        Case("write-nested", "Write", {"file_path": "a/b/c/new.py", "content": "x = 1\n"}),
        Case("write-overwrite", "Write", {"file_path": "f.txt", "content": "replaced"}, TEXT),
        Case("write-unicode-counts-chars", "Write", {"file_path": "u.txt", "content": "héllo wö"}),
        Case("write-emoji", "Write", {"file_path": "u.txt", "content": "🐸🐸"}),
        Case("write-empty-content", "Write", {"file_path": "e.txt", "content": ""}),
        Case("write-int-content", "Write", {"file_path": "n.txt", "content": 42}),
        Case("write-directory", "Write", {"file_path": "src", "content": "x"}, PY),
        Case("write-parent-is-file", "Write", {"file_path": "f.txt/inner.txt", "content": "x"}, TEXT),
        Case("write-grandparent-is-file", "Write", {"file_path": "f.txt/a/inner.txt", "content": "x"}, TEXT),
        Case("write-path-alias", "Write", {"path": "p.txt", "content": "x"}),
        Case("write-no-path", "Write", {"content": "x"}),
        Case("write-absolute-inside", "Write", {"file_path": "{root}/abs.txt", "content": "abc"}),
        Case("write-outside", "Write", {"file_path": "{out}/new.txt", "content": "abc"}),
        Case("write-dotdot", "Write", {"file_path": "../out/up.txt", "content": "abc"}),
        Case("write-trailing-slash", "Write", {"file_path": "dir/", "content": "abc"}),
        Case("write-symlink", "Write", {"file_path": "link.txt", "content": "via link"}, TEXT, links={"link.txt": "f.txt"}),
        Case("write-crlf-content", "Write", {"file_path": "w.txt", "content": "a\r\nb\r\n"}),
        Case("write-multiline", "Write", {"file_path": "m.py", "content": "def f():\n    return 1\n"}),
    ]


CODE = {"m.py": b"def f():\n    return 1\n\n\ndef g():\n    return 1\n"}


def _edit() -> list[Case]:
    return [
        Case("edit-one", "Edit", {"file_path": "m.py", "old_string": "def f", "new_string": "def h"}, CODE),
        Case("edit-not-found", "Edit", {"file_path": "m.py", "old_string": "def zz", "new_string": "x"}, CODE),
        Case("edit-multiple", "Edit", {"file_path": "m.py", "old_string": "return 1", "new_string": "return 2"}, CODE),
        Case("edit-multiple-replace-all", "Edit",
             {"file_path": "m.py", "old_string": "return 1", "new_string": "return 2", "replace_all": True}, CODE),
        Case("edit-replace-all-string-true", "Edit",
             {"file_path": "m.py", "old_string": "return 1", "new_string": "r", "replace_all": "true"}, CODE),
        Case("edit-replace-all-yes", "Edit",
             {"file_path": "m.py", "old_string": "return 1", "new_string": "r", "replace_all": " YES "}, CODE),
        Case("edit-replace-all-one", "Edit",
             {"file_path": "m.py", "old_string": "return 1", "new_string": "r", "replace_all": 1}, CODE),
        Case("edit-replace-all-zero", "Edit",
             {"file_path": "m.py", "old_string": "return 1", "new_string": "r", "replace_all": "0"}, CODE),
        Case("edit-replace-all-false", "Edit",
             {"file_path": "m.py", "old_string": "return 1", "new_string": "r", "replace_all": False}, CODE),
        Case("edit-replace-all-single", "Edit",
             {"file_path": "m.py", "old_string": "def g", "new_string": "def k", "replace_all": True}, CODE),
        Case("edit-empty-old", "Edit", {"file_path": "m.py", "old_string": "", "new_string": "x"}, CODE),
        Case("edit-missing-old", "Edit", {"file_path": "m.py", "new_string": "x"}, CODE),
        Case("edit-missing-new-deletes", "Edit", {"file_path": "m.py", "old_string": "def f():\n"}, CODE),
        Case("edit-identical", "Edit", {"file_path": "m.py", "old_string": "def f", "new_string": "def f"}, CODE),
        Case("edit-identical-multiple", "Edit", {"file_path": "m.py", "old_string": "return 1", "new_string": "return 1"}, CODE),
        Case("edit-missing-file", "Edit", {"file_path": "nope.py", "old_string": "a", "new_string": "b"}),
        Case("edit-missing-file-empty-old", "Edit", {"file_path": "nope.py", "old_string": "", "new_string": "b"}),
        Case("edit-directory", "Edit", {"file_path": "src", "old_string": "a", "new_string": "b"}, PY),
        Case("edit-no-path", "Edit", {"old_string": "a", "new_string": "b"}),
        Case("edit-path-alias", "Edit", {"path": "m.py", "old_string": "def f", "new_string": "def q"}, CODE),
        Case("edit-crlf-file", "Edit", {"file_path": "c.txt", "old_string": "a\nb", "new_string": "x\ny"}, {"c.txt": b"a\r\nb\r\nc\r\n"}),
        Case("edit-multiline", "Edit", {"file_path": "m.py", "old_string": "def g():\n    return 1", "new_string": "def g():\n    return 3"}, CODE),
        Case("edit-unicode", "Edit", {"file_path": "u.txt", "old_string": "wö", "new_string": "wo"}, {"u.txt": "héllo wö\n".encode()}),
        Case("edit-outside", "Edit", {"file_path": "{out}/secret.txt", "old_string": "outside", "new_string": "in"}),
        Case("edit-int-new", "Edit", {"file_path": "m.py", "old_string": "1", "new_string": 2}, {"m.py": b"x = 1\n"}),
        Case("edit-whitespace-mismatch", "Edit", {"file_path": "m.py", "old_string": "def f():\n  return 1", "new_string": "x"}, CODE),
    ]


def _glob() -> list[Case]:
    many = {f"many/f{i:04d}.txt": b"" for i in range(1003)}
    git = {".git/HEAD": b"ref\n", ".git/config": b"[core]\n", ".git/refs/heads/main": b"0\n", ".gitignore": b"*.pyc\n"}
    return [
        Case("glob-star-py", "Glob", {"pattern": "*.py"}, PY),
        Case("glob-recursive", "Glob", {"pattern": "**/*.py"}, PY),
        Case("glob-star-star", "Glob", {"pattern": "**"}, PY),
        Case("glob-star", "Glob", {"pattern": "*"}, PY),
        Case("glob-subdir-pattern", "Glob", {"pattern": "src/**/*.py"}, PY),
        Case("glob-src-star-star", "Glob", {"pattern": "src/**"}, PY),
        Case("glob-no-match", "Glob", {"pattern": "*.rs"}, PY),
        Case("glob-path", "Glob", {"pattern": "*.py", "path": "src"}, PY),
        Case("glob-path-recursive", "Glob", {"pattern": "**/*.py", "path": "src"}, PY),
        Case("glob-path-missing", "Glob", {"pattern": "*.py", "path": "nowhere"}, PY),
        Case("glob-path-is-file", "Glob", {"pattern": "*", "path": "a.py"}, PY),
        Case("glob-empty-pattern", "Glob", {"pattern": ""}, PY),
        Case("glob-no-pattern", "Glob", {}, PY),
        Case("glob-dot-git-star", "Glob", {"pattern": ".git/*"}, {**PY, **git}),
        Case("glob-dot-git-recursive", "Glob", {"pattern": ".git/**"}, {**PY, **git}),
        Case("glob-all-skips-git", "Glob", {"pattern": "**/*"}, {**PY, **git}),
        Case("glob-dot-star", "Glob", {"pattern": ".*"}, {**PY, **git}),
        Case("glob-hidden-recursive", "Glob", {"pattern": "**/.gitignore"}, {**PY, **git, "src/.gitignore": b""}),
        Case("glob-trailing-slash-dir", "Glob", {"pattern": "src/"}, PY),
        Case("glob-trailing-slash-star", "Glob", {"pattern": "*/"}, PY),
        Case("glob-trailing-slash-file", "Glob", {"pattern": "a.py/"}, PY),
        Case("glob-symlinked-dir", "Glob", {"pattern": "**/*.py"}, PY, links={"alias": "src"}),
        Case("glob-symlinked-file", "Glob", {"pattern": "*.py"}, PY, links={"z.py": "src/c.py"}),
        Case("glob-symlink-outside", "Glob", {"pattern": "*.txt"}, {"k.txt": b""}, links={"s.txt": "../out/secret.txt"}),
        Case("glob-dangling-symlink", "Glob", {"pattern": "*"}, {"k.txt": b""}, links={"dead": "nothing"}),
        Case("glob-absolute-inside", "Glob", {"pattern": "{root}/src/*.py"}, PY),
        Case("glob-absolute-outside", "Glob", {"pattern": "{out}/*.txt"}),
        Case("glob-path-outside", "Glob", {"pattern": "*.txt", "path": "../out"}),
        Case("glob-dotdot-after-wildcard", "Glob", {"pattern": "*/../*.py"}, PY),
        Case("glob-literal-file", "Glob", {"pattern": "src/c.py"}, PY),
        Case("glob-literal-missing", "Glob", {"pattern": "src/zz.py"}, PY),
        Case("glob-literal-dir", "Glob", {"pattern": "src"}, PY),
        Case("glob-brackets", "Glob", {"pattern": "[ab].py"}, PY),
        Case("glob-negated-brackets", "Glob", {"pattern": "[!a].py"}, PY),
        Case("glob-question", "Glob", {"pattern": "?.py"}, PY),
        Case("glob-double-slash", "Glob", {"pattern": "src//*.py"}, PY),
        Case("glob-dot-slash", "Glob", {"pattern": "./src/*.py"}, PY),
        Case("glob-limit", "Glob", {"pattern": "many/*"}, many),
        Case("glob-limit-recursive", "Glob", {"pattern": "**/*.txt"}, many),
        Case("glob-empty-dir", "Glob", {"pattern": "**/*"}, dirs=["empty/inner"]),
        Case("glob-path-alias-dot", "Glob", {"pattern": "*.md", "path": "."}, PY),
        Case("glob-path-empty", "Glob", {"pattern": "*.md", "path": ""}, PY),
        Case("glob-int-pattern", "Glob", {"pattern": 7}, {"7": b""}),
        Case("glob-middle-star-star", "Glob", {"pattern": "src/**/d.py"}, PY),
        Case("glob-star-star-name", "Glob", {"pattern": "**/c.py"}, PY),
        Case("glob-star-dir", "Glob", {"pattern": "*/*.py"}, PY),
    ]


def _bash() -> list[Case]:
    return [
        Case("bash-echo", "Bash", {"command": "echo hello"}),
        Case("bash-exit-code", "Bash", {"command": "echo out; exit 3"}),
        Case("bash-stderr", "Bash", {"command": "echo err >&2"}),
        Case("bash-both", "Bash", {"command": "echo a; echo b >&2; echo c"}),
        Case("bash-no-output", "Bash", {"command": "true"}),
        Case("bash-no-final-newline", "Bash", {"command": "printf abc"}),
        Case("bash-crlf", "Bash", {"command": "printf 'a\\r\\nb\\r\\n'"}),
        Case("bash-lone-cr", "Bash", {"command": "printf 'progress 1\\rprogress 2\\n'"}),
        Case("bash-unicode", "Bash", {"command": "printf 'h\\xc3\\xa9 \\xf0\\x9f\\x90\\xb8\\n'"}),
        Case("bash-invalid-utf8-stdout", "Bash", {"command": "printf 'ok\\n\\xff\\xfe\\n'"}),
        Case("bash-invalid-utf8-stderr", "Bash", {"command": "printf 'fine\\n'; printf 'a\\xe9b\\n' >&2"}),
        Case("bash-invalid-utf8-truncated-seq", "Bash", {"command": "printf 'abc\\xe2\\x82'"}),
        Case("bash-invalid-late", "Bash", {"command": "head -c 50000 /dev/zero | tr '\\0' x; printf '\\xff'"}),
        Case("bash-pwd", "Bash", {"command": "pwd"}),
        Case("bash-ls", "Bash", {"command": "ls"}, PY),
        Case("bash-cat", "Bash", {"command": "cat f.txt"}, TEXT),
        Case("bash-syntax-error", "Bash", {"command": "("}),
        Case("bash-not-found", "Bash", {"command": "frognano_no_such_command_x"}),
        Case("bash-empty-command", "Bash", {"command": ""}),
        Case("bash-no-command", "Bash", {}),
        Case("bash-whitespace-command", "Bash", {"command": "   "}),
        Case("bash-int-command", "Bash", {"command": 7}),
        Case("bash-description-ignored", "Bash", {"command": "echo d", "description": "say d"}),
        Case("bash-timeout", "Bash", {"command": "echo before; sleep 5; echo after", "timeout": 1}),
        Case("bash-timeout-stderr", "Bash", {"command": "echo e >&2; sleep 5", "timeout": 1}),
        Case("bash-timeout-crlf-kept", "Bash", {"command": "printf 'a\\r\\n\\xff'; sleep 5", "timeout": 1}),
        Case("bash-timeout-ms-large", "Bash", {"command": "sleep 5", "timeout": 1500}),
        Case("bash-timeout-ms-key", "Bash", {"command": "sleep 5", "timeout_ms": 700}),
        Case("bash-timeout-string", "Bash", {"command": "echo s", "timeout": "5"}),
        Case("bash-timeout-garbage", "Bash", {"command": "echo s", "timeout": "abc"}),
        Case("bash-timeout-list", "Bash", {"command": "echo s", "timeout": [5]}),
        Case("bash-timeout-negative", "Bash", {"command": "sleep 2", "timeout": -3}),
        Case("bash-timeout-zero", "Bash", {"command": "sleep 2", "timeout": 0}),
        Case("bash-timeout-bool", "Bash", {"command": "echo b", "timeout": True}),
        Case("bash-timeout-null", "Bash", {"command": "echo n", "timeout": None}),
        Case("bash-timeout-ms-garbage", "Bash", {"command": "echo m", "timeout_ms": "x"}),
        Case("bash-big-stdout", "Bash", {"command": "head -c 40000 /dev/zero | tr '\\0' o"}),
        Case("bash-big-both", "Bash", {"command": "head -c 20000 /dev/zero | tr '\\0' o; head -c 20000 /dev/zero | tr '\\0' e >&2"}),
        Case("bash-big-stderr", "Bash", {"command": "echo small; head -c 35000 /dev/zero | tr '\\0' e >&2"}),
        Case("bash-exactly-cap", "Bash", {"command": f"head -c {30000 - len('Exit code: 0') - 18} /dev/zero | tr '\\0' k"}),
        Case("bash-one-over-cap", "Bash", {"command": f"head -c {30001 - len('Exit code: 0') - 18} /dev/zero | tr '\\0' k"}),
        Case("bash-huge-output", "Bash", {"command": "head -c 3000000 /dev/zero | tr '\\0' h"}),
        Case("bash-background-redirected", "Bash", {"command": "sleep 30 >/dev/null 2>&1 & echo started"}),
        Case("bash-background-holds-pipe", "Bash", {"command": "(sleep 4; echo late) & echo early", "timeout": 1}),
        Case("bash-exit-signal", "Bash", {"command": "kill -9 $$"}),
        Case("bash-stdin-closed", "Bash", {"command": "cat; echo done"}),
        Case("bash-env-home", "Bash", {"command": "test -n \"$HOME\" && echo has-home"}),
        Case("bash-heredoc", "Bash", {"command": "cat <<'EOF'\nline $x\nEOF"}),
        Case("bash-write-then-read", "Bash", {"command": "echo v > w.txt && cat w.txt"}),
        Case("bash-path-key-ignored", "Bash", {"command": "echo p", "path": "elsewhere"}),
    ]


def _where_leaf_differs() -> list[Case]:
    """Calls on which FrogNano's harness lost data, corrupted a file or crashed (see DEVIATIONS)."""
    return [
        Case("write-missing-content", "Write", {"file_path": "f.txt"}, TEXT),
        Case("write-null-content", "Write", {"file_path": "f.txt", "content": None}, TEXT),
        Case("write-object-content", "Write", {"file_path": "c.json", "content": {"a": [1, True]}}),
        Case("edit-binary", "Edit", {"file_path": "img.bin", "old_string": "PNG", "new_string": "GIF"},
             {"img.bin": b"\x89PNG\r\n\x00\x00\xff"}),
        Case("bash-timeout-infinite", "Bash", {"command": "echo i", "timeout": "inf"}),
    ]


def _other() -> list[Case]:
    return [
        Case("unknown-tool", "Grep", {"pattern": "x"}),
        Case("lowercase-tool", "read", {"file_path": "f.txt"}, TEXT),
        Case("read-extra-keys", "Read", {"file_path": "f.txt", "foo": 1}, TEXT),
    ]


CASES: list[Case] = _read() + _write() + _edit() + _glob() + _bash() + _where_leaf_differs() + _other()
