"""What every hub transfer shares: the endpoint, one-line errors, and progress without huggingface_hub's bars.

`HF_ENDPOINT` and `HF_HUB_CACHE` are read at call time, so a mirror (or a test's stand-in hub) can be chosen
per call. Every failure huggingface_hub can raise becomes one LeafError line that says what to do; a hub
that cannot be reached is said at once (the listing call does not retry).
"""

from __future__ import annotations

import contextlib
import errno
import os
from typing import Any, Callable, Iterator

from leaf_cli.errors import LeafError

OnProgress = Callable[[int, "int | None"], None]
"""Called with (bytes done, bytes total or None) as a download advances."""


def endpoint() -> str | None:
    return os.environ.get("HF_ENDPOINT") or None


def cache_dir() -> str | None:
    return os.environ.get("HF_HUB_CACHE") or None


@contextlib.contextmanager
def hub_errors(repo: str, where: str, *, missing: str | None = None) -> Iterator[None]:
    """Translate huggingface_hub's exceptions for `where` (a repo, file or revision) into one LeafError line."""
    from huggingface_hub.errors import (EntryNotFoundError, GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError,
                                        OfflineModeIsEnabled, RepositoryNotFoundError, RevisionNotFoundError)

    try:
        yield
    except GatedRepoError:
        raise LeafError(f"{repo} is gated: accept its licence on the hub, then `hf auth login`") from None
    except RepositoryNotFoundError:
        raise LeafError(f"hub repository {repo} not found (private, renamed or a wrong manifest)") from None
    except RevisionNotFoundError:
        raise LeafError(f"revision not found in {repo} ({where})") from None
    except (LocalEntryNotFoundError, OfflineModeIsEnabled):
        raise LeafError(f"cannot reach the model hub for {where}: check the network or HF_ENDPOINT") from None
    except EntryNotFoundError:
        raise LeafError(missing or f"{where} not found in {repo}; the manifest may be wrong") from None
    except HfHubHTTPError as exc:
        raise LeafError(f"download of {where} failed: {first_line(exc)}") from None
    except OSError as exc:  # size mismatch after retries, disk full, permissions
        if exc.errno == errno.ENOSPC:
            raise LeafError(f"the disk filled up while downloading {where}; free space and run the pull "
                            "again (it resumes)") from None
        raise LeafError(f"download of {where} failed: {first_line(exc)}") from None
    except Exception as exc:  # the hub client's own transport errors (httpx)
        if type(exc).__module__.split(".")[0].startswith("httpx"):
            if "Connect" in type(exc).__name__ or "Timeout" in type(exc).__name__:
                raise LeafError(f"cannot reach the model hub for {where} ({type(exc).__name__}): "
                                "check the network or HF_ENDPOINT") from None
            raise LeafError(f"download of {where} failed: {type(exc).__name__}: {first_line(exc)}") from None
        raise


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def bar_class(on_progress: OnProgress | None, offset: int = 0, total: int | None = None) -> type[Any]:
    """A tqdm subclass huggingface_hub can drive that draws nothing and forwards progress to `on_progress`.

    `offset` and `total` make several files' downloads one bar: bytes of earlier files plus this file's.
    """
    from tqdm.auto import tqdm

    class _Bar(tqdm):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._done = int(kwargs.get("initial") or 0)
            self._size = total if total is not None else kwargs.get("total")
            kwargs["disable"] = True  # leaf's front end draws its own bar
            super().__init__(*args, **kwargs)

        def update(self, n: float | None = 1) -> bool | None:
            self._done += int(n or 0)
            if on_progress is not None:
                on_progress(offset + self._done, self._size)
            return None

    return _Bar
