"""SWE-bench Verified / Lite / Pro rows in the public formats -> leaf tasks."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest

from leaf_cli.errors import LeafError
from leaf_cli.tasks import load_tasks
from leaf_cli.tasks.importers import import_swebench_rows, read_rows, swebench_image
from leaf_cli.tasks.importers.swebench_specs import END_MARKER, EXIT_MARKER, START_MARKER, directives

DJANGO_TEST_PATCH = """diff --git a/tests/admin_views/tests.py b/tests/admin_views/tests.py
--- a/tests/admin_views/tests.py
+++ b/tests/admin_views/tests.py
@@ -1,2 +1,3 @@
 import os
+import sys
diff --git a/tests/admin_views/test_new.py b/tests/admin_views/test_new.py
new file mode 100644
--- /dev/null
+++ b/tests/admin_views/test_new.py
@@ -0,0 +1 @@
+x = 1
diff --git a/docs/releases/3.0.txt b/docs/releases/3.0.txt
--- a/docs/releases/3.0.txt
+++ b/docs/releases/3.0.txt
@@ -1 +1,2 @@
 a
+b
"""


def verified_row(**over: object) -> dict:
    """A row as princeton-nlp/SWE-bench_Verified ships it: F2P/P2P as JSON strings."""
    row = {
        "repo": "django/django", "instance_id": "django__django-11099", "base_commit": "d26b2424437dabeeca94d7900b37d2df4410da0c",
        "patch": "diff --git a/django/x.py b/django/x.py\n", "test_patch": DJANGO_TEST_PATCH,
        "problem_statement": "UsernameValidator allows trailing newline", "hints_text": "", "created_at": "2019-03-20",
        "version": "3.0", "FAIL_TO_PASS": json.dumps(["test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)"]),
        "PASS_TO_PASS": "[]", "environment_setup_commit": "419a78300f7cd27611196e1e464d50fd0385ff27", "difficulty": "<15 min fix",
    }
    row.update(over)
    return row


def test_image_name_follows_the_official_scheme() -> None:
    assert swebench_image("django__django-11099") == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    assert swebench_image("Psf__Requests-2317") == "swebench/sweb.eval.x86_64.psf_1776_requests-2317:latest"


def test_verified_jsonl_row_becomes_a_task(tmp_path: Path) -> None:
    rows_file = tmp_path / "verified.jsonl"
    rows_file.write_text(json.dumps(verified_row()) + "\n")
    [task] = import_swebench_rows(read_rows(rows_file), dataset="verified")
    extra = task.model_extra
    assert task.FAIL_TO_PASS == ["test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)"]
    assert task.PASS_TO_PASS == []
    assert extra["image_name"] == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    assert extra["workdir"] == "/testbed" and extra["difficulty"] == "<15 min fix"
    assert task.install_config.test_cmd == "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
    assert task.install_config.log_parser == "swebench:django"
    assert extra["test_files"] == ["admin_views.tests", "admin_views.test_new"]
    script = extra["eval_script"]
    # django 3.0 generates its locale before the run and re-installs; the modified test files are reset
    # twice; the file the test patch creates is left in place, as the official script leaves it.
    assert "locale-gen" in script and "\npython -m pip install -e .\n" in script
    assert script.count("git checkout d26b2424437dabeeca94d7900b37d2df4410da0c tests/admin_views/tests.py") == 2
    assert "test_new.py" not in script.split("EOF_114329324912")[0] and "rm -f" not in script
    start, end = script.index(START_MARKER), script.index(END_MARKER)
    assert start < script.index("runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 admin_views.tests admin_views.test_new") < end
    assert script.index(EXIT_MARKER) > end
    out = tmp_path / "tasks.jsonl"
    from leaf_cli.tasks import dump_tasks

    dump_tasks([task], out)
    reread = load_tasks(out)
    assert not reread.errors and reread.tasks[0].model_extra["image_name"] == extra["image_name"]


@pytest.mark.parametrize(("repo", "version", "cmd", "parser"), [
    ("sympy/sympy", "1.1", "bin/test -C --verbose", "swebench:sympy"),
    ("django/django", "1.9", "./tests/runtests.py --verbosity 2", "swebench:django"),
    ("astropy/astropy", "1.3", "pytest -rA -vv -o console_output_style=classic --tb=no", "swebench:pytest_v2"),
    ("astropy/astropy", "5.0", "pytest -rA", "swebench:pytest_v2"),
    ("psf/requests", "2.0", "pytest -rA", "swebench:pytest_options"),
    ("mwaskom/seaborn", "0.12", "pytest --no-header -rA", "swebench:seaborn"),
])
def test_test_command_and_parser_per_repo(repo: str, version: str, cmd: str, parser: str) -> None:
    [task] = import_swebench_rows([verified_row(repo=repo, version=version, instance_id=repo.replace("/", "__") + "-1")])
    assert task.install_config.test_cmd.endswith(cmd)
    assert task.install_config.log_parser == parser


def test_unknown_repo_imports_without_guessing_a_command() -> None:
    [task] = import_swebench_rows([verified_row(repo="octo/cat", instance_id="octo__cat-1")])
    assert task.install_config.test_cmd is None and "eval_script" not in task.model_extra


def test_targets_for_pytest_repos_are_file_paths() -> None:
    patch = "diff --git a/tests/test_a.py b/tests/test_a.py\ndiff --git a/tests/data.json b/tests/data.json\n"
    assert directives("pytest-dev/pytest", patch) == ["tests/test_a.py"]


def pro_row() -> dict:
    """A ScaleAI/SWE-bench_Pro row: lower-case lists (one JSON, one Python repr) and Pro's own columns."""
    return {
        "repo": "navidrome/navidrome", "instance_id": "instance_navidrome__navidrome-97434c17",
        "base_commit": "f8ee6db72a015f33b41879d1ba253eeff8884bfd", "patch": "", "test_patch": "",
        "problem_statement": "Players are not refreshed", "requirements": "Must keep the cache", "interface": "No new interfaces",
        "repo_language": "go", "fail_to_pass": "['TestCore']", "pass_to_pass": "[\"TestOther\"]",
        "before_repo_set_cmd": "git reset --hard f8ee6db\ngit checkout 97434c1 -- core/players_test.go",
        "selected_test_files_to_run": "[\"core/players_test.go\"]",
        "dockerhub_tag": "navidrome.navidrome-navidrome__navidrome-97434c1789a6444b30aae5ff5aa124a96a88f504",
    }


def test_pro_row_keeps_its_columns_and_names_its_image(tmp_path: Path) -> None:
    scripts = tmp_path / "run_scripts" / "instance_navidrome__navidrome-97434c17"
    scripts.mkdir(parents=True)
    (scripts / "run_script.sh").write_text("go test ./... -run \"$1\"\n")
    (scripts / "parser.py").write_text("import sys\n")
    [task] = import_swebench_rows([pro_row()], pro_scripts=tmp_path / "run_scripts")
    extra = task.model_extra
    assert extra["image_name"] == "jefzda/sweap-images:navidrome.navidrome-navidrome__navidrome-97434c1789a6444b30aae5ff5aa124a96a88f504"
    assert task.FAIL_TO_PASS == ["TestCore"] and task.PASS_TO_PASS == ["TestOther"]
    assert extra["repo_language"] == "go" and extra["workdir"] == "/app"
    assert "## Requirements\n\nMust keep the cache" in task.problem_statement
    assert extra["run_script"].startswith("go test") and extra["parser_script"] == "import sys\n"
    script = extra["eval_script"]
    assert "git checkout 97434c1 -- core/players_test.go" in script and "git reset --hard f8ee6db\n" not in script
    assert "bash /workspace/run_script.sh core/players_test.go" in script


def test_pro_scripts_folder_without_the_instance_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(LeafError, match="run_script.sh or parser.py"):
        import_swebench_rows([pro_row()], pro_scripts=tmp_path)


def test_row_missing_columns_is_one_clear_error() -> None:
    with pytest.raises(LeafError, match=r"row 1: missing base_commit"):
        import_swebench_rows([{"instance_id": "a__b-1", "repo": "a/b", "problem_statement": "x"}])


def test_parquet_without_pyarrow_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_parquet(name: str, *args: object, **kwargs: object):
        if name.split(".")[0] in ("pyarrow", "pandas"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_parquet)
    path = tmp_path / "test-00000-of-00001.parquet"
    path.write_bytes(b"PAR1")
    with pytest.raises(LeafError, match="pip install pyarrow"):
        read_rows(path)


def test_parquet_rows_when_pyarrow_is_installed(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed here (parquet is optional)")
    import pyarrow.parquet as pq

    path = tmp_path / "verified.parquet"
    pq.write_table(pa.Table.from_pylist([verified_row()]), path)
    [task] = import_swebench_rows(read_rows(path))
    assert task.instance_id == "django__django-11099"


def test_json_list_and_folder_of_files(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([verified_row()]))
    (tmp_path / "b.jsonl").write_text(json.dumps(verified_row(instance_id="django__django-2")) + "\n")
    assert [r["instance_id"] for r in read_rows(tmp_path)] == ["django__django-11099", "django__django-2"]
    (tmp_path / "bad.jsonl").write_text("{not json}\n")
    with pytest.raises(LeafError, match=r"bad.jsonl:1: not a JSON line"):
        read_rows(tmp_path / "bad.jsonl")


def test_rows_carrying_their_own_image_script_and_parser_use_them() -> None:
    """swebench 5's re-released rows name their image, eval script, parser and eval type: those win."""
    row = verified_row(image="swebench/sweb.eval.x86_64.custom:v2", log_parser="parse_log_pytest_v2",
                       eval_type="fail_only", eval_script="#!/bin/bash\nset -uxo pipefail\ncd /testbed\n"
                       f": '{START_MARKER}'\nmake check\n: '{END_MARKER}'\n")
    [task] = import_swebench_rows([row])
    extra = task.model_extra
    assert extra["image_name"] == "swebench/sweb.eval.x86_64.custom:v2" and extra["swebench_eval_type"] == "fail_only"
    assert task.install_config.log_parser == "parse_log_pytest_v2" and extra["eval_type"] == "swebench"
    assert extra["eval_script"] == ("#!/bin/bash\nset -uxo pipefail\ncd /testbed\n: '>>>>> Start Test Output'\n"
                                    "make check\nSWEBENCH_TEST_EXIT_CODE=$?\n: '>>>>> End Test Output'\n"
                                    'echo ">>>>> Test Exit Code: $SWEBENCH_TEST_EXIT_CODE"\n')
    with pytest.raises(LeafError, match="log_parser 'parse_log_jest'"):
        import_swebench_rows([verified_row(log_parser="parse_log_jest")])
