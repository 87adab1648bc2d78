"""Real git repositories for tests: a messy one (staged, unstaged, untracked, modes, stash) and its fingerprint."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path


def sh(cwd: Path, script: str) -> str:
    """Run a bash script in `cwd` with a fixed git identity; fail loudly."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": "/dev/null"}
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{script}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def messy_repo(root: Path) -> Path:
    """A repository with every kind of state a user can have in flight."""
    root.mkdir(parents=True, exist_ok=True)
    sh(root, """
        git init -q -b main .
        mkdir -p src docs
        printf 'def add(a, b):\\n    return a + b\\n' > src/calc.py
        printf '#!/bin/sh\\necho hi\\n' > run.sh && chmod +x run.sh
        printf 'old docs\\n' > docs/guide.md
        printf 'gone soon\\n' > doomed.txt
        printf '*.log\\nbuild/\\n' > .gitignore
        ln -s src/calc.py link.py
        git add -A && git commit -qm one
        printf 'second\\n' >> docs/guide.md && git commit -qam two
        git branch feature
        printf 'stashed change\\n' >> docs/guide.md && git stash -q
        printf 'def add(a, b):\\n    return a + b  # staged\\n' > src/calc.py && git add src/calc.py
        printf 'def add(a, b):\\n    return a + b  # staged then edited\\n' > src/calc.py
        printf 'new staged file\\n' > src/new.py && git add src/new.py
        printf 'untracked notes\\n' > notes.txt
        mkdir -p scratch/deep && printf 'deep untracked\\n' > scratch/deep/x.txt
        printf 'ignored log\\n' > debug.log
        chmod -x run.sh
        rm doomed.txt
        printf 'intent\\n' > intent.py && git add -N intent.py
    """)
    return root


def files_of(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every byte and mode of the work tree outside .git, ignored *.log files aside."""
    files: dict[str, tuple[str, bytes]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if rel.endswith(".log"):
                continue
            st = path.lstat()
            body = os.readlink(path).encode() if stat.S_ISLNK(st.st_mode) else path.read_bytes()
            files[rel] = (oct(st.st_mode), body)
    return files


def fingerprint(root: Path) -> dict[str, object]:
    """The work tree's bytes and modes, and what git says about HEAD, the index, refs and the stash."""
    return {
        "files": files_of(root),
        "status": sh(root, "git status --porcelain=v2 --branch --untracked-files=all"),
        "staged": sh(root, "git diff --cached --binary"),
        "unstaged": sh(root, "git diff --binary"),
        "refs": sh(root, "git for-each-ref --format='%(objectname) %(refname)'"),
        "head": sh(root, "git symbolic-ref -q HEAD || git rev-parse HEAD"),
        "stash": sh(root, "git stash list --format='%H %gs'"),
        "log": sh(root, "git log --format=%H --all"),
    }
