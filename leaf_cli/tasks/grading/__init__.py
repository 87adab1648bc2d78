"""Grading: the verdict on one patch. `choose.py` picks the grader; `pytest.py` is leaf's own (F2P / P2P by
node id through `pytest_plugin/`, run by `testrun.py`), `swebench.py` SWE-bench's and Pro's in their images
(logs read by `log_parsers.py`), `reward.py` the verifier-script graders, `harbor.py` Harbor's and
`patcheval.py` PatchEval's; every one returns a `verdict.GradeResult`. `patches.py` applies diffs with
SWE-bench's ladder."""
