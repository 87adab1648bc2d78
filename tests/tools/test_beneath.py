"""The walk beneath the work tree (tools/beneath.py) on real folders and symlinks: links inside are followed
(relative, absolute under the root, through `..`), every way out is Escape, loops are ELOOP, and a folder
swapped for a link after the walk reached it changes nothing (the walk holds its descriptor)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from leaf_cli.tools.beneath import Escape, walk


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = (tmp_path / "root").resolve()
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("inside\n")
    (root / "sub").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "m.py").write_text("OUTSIDE\n")
    return root


def _read(root: Path, rel: str) -> tuple[str, str]:
    with walk(str(root), rel.split("/")) as place:
        fd = os.open(place.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=place.dir_fd)
        with os.fdopen(fd) as handle:
            return place.real, handle.read()


def test_links_inside_are_followed_and_named_by_where_they_lead(root: Path) -> None:
    (root / "rel").symlink_to("pkg")
    (root / "abs").symlink_to(root / "pkg")  # absolute, under the root: walked from the root's descriptor
    (root / "sub" / "up").symlink_to("..")
    (root / "sub" / "file").symlink_to("../pkg/m.py")
    for rel in ("rel/m.py", "abs/m.py", "sub/up/pkg/m.py", "sub/file", "sub/up/rel/../pkg/m.py"):
        assert _read(root, rel) == (f"{root}/pkg/m.py", "inside\n"), rel


@pytest.mark.parametrize("link", ["../../outside", "ABS", "../../root/../outside", "../../root/pkg"])
def test_every_way_out_is_an_escape(root: Path, link: str) -> None:
    # A link that climbs above the root is refused even where it would come back in: the walk never holds a
    # descriptor outside the tree (the check before it resolved such a path already, so this is a swap).
    (root / "sub" / "out").symlink_to(str(root.parent / "outside") if link == "ABS" else link)
    with pytest.raises(Escape):
        walk(str(root), ["sub", "out", "m.py"])
    with pytest.raises(Escape):
        walk(str(root), ["..", "outside", "m.py"])


def test_a_loop_is_eloop_and_a_file_in_the_way_is_said_so(root: Path) -> None:
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    with pytest.raises(OSError) as loop:
        walk(str(root), ["a", "x"])
    assert loop.value.errno == errno.ELOOP
    with pytest.raises(NotADirectoryError) as middle:
        walk(str(root), ["pkg", "m.py", "x"])
    assert middle.value.filename == f"{root}/pkg/m.py"
    with pytest.raises(FileExistsError):  # as Path.mkdir(parents=True, exist_ok=True) words it
        walk(str(root), ["pkg", "m.py", "x", "y"], create_dirs=True)
    with walk(str(root), ["new", "deeper", "f.txt"], create_dirs=True) as place:
        assert place.name == "f.txt" and (root / "new" / "deeper").is_dir()


def test_a_folder_swapped_for_a_link_after_the_walk_changes_nothing(root: Path) -> None:
    with walk(str(root), ["pkg", "m.py"]) as place:
        os.rename(root / "pkg", root / "moved")
        (root / "pkg").symlink_to(root.parent / "outside")  # the swap, after the walk reached the folder
        fd = os.open(place.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=place.dir_fd)
        with os.fdopen(fd) as handle:
            assert handle.read() == "inside\n"  # the folder the walk opened, wherever it now is
    with pytest.raises(Escape):  # and the next walk sees the link for what it is
        walk(str(root), ["pkg", "m.py"])
