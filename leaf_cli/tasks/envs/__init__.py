"""Environments: where a task's code and tests run. The caches and their lock (`cache.py`), a task's start
state (`source.py`), the cached venv (`venv.py`), the images of image tasks (`image.py`, `container_args.py`),
the eval's sandboxes (`sandbox.py`, `docker.py`, picked by name in `backends.py` from tools/sandboxes.py), one
bounded command (`proc.py`), and the places a verifier script runs (`verifier_runs.py`, with the container
path rewriting of the host sandboxes in `path_rewrite.py`)."""
