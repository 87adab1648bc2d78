"""AST-level bug injection with libcst: each operator rewrites one node and leaves the rest of the file as is.

A site is (file, operator, index): the index-th node the operator can rewrite, counted in libcst's visit
order over the whole module, so `sites()` and `apply()` agree without carrying positions around. Sites are
kept only inside functions a passing test calls (the coverage recorded by the probe plugin).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

OPERATORS = ("flip_compare", "flip_boolean", "change_constant", "drop_branch", "swap_args", "remove_return", "shift_bound")

_COMPARE_FLIP = {
    cst.LessThan: cst.LessThanEqual, cst.LessThanEqual: cst.LessThan, cst.GreaterThan: cst.GreaterThanEqual,
    cst.GreaterThanEqual: cst.GreaterThan, cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal,
    cst.In: cst.NotIn, cst.NotIn: cst.In, cst.Is: cst.IsNot, cst.IsNot: cst.Is,
}


@dataclass(frozen=True)
class Site:
    """One rewritable node: `function` is the innermost enclosing function, `line` its 1-based line."""

    path: str
    operator: str
    index: int
    line: int
    function: str
    function_lines: tuple[int, int]  # first decorator or `def` line, and the line of the name


class _Mutator(cst.CSTTransformer):
    """Counts rewritable nodes per operator; rewrites the `target` one, or only records sites when None."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, path: str, target: tuple[str, int] | None) -> None:
        super().__init__()
        self.path, self.target = path, target
        self.counts = {op: 0 for op in OPERATORS}
        self.sites: list[Site] = []
        self.functions: list[tuple[str, tuple[int, int]]] = []
        self.applied = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.target is not None:  # applying: positions are not needed (and cost a metadata pass)
            self.functions.append((node.name.value, (0, 0)))
            return
        first = self.get_metadata(PositionProvider, node).start.line
        self.functions.append((node.name.value, (first, self.get_metadata(PositionProvider, node.name).start.line)))

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        self.functions.pop()
        return updated

    def _hit(self, op: str, node: cst.CSTNode) -> bool:
        """Count a site of `op`; True when it is the one to rewrite. Sites outside functions are not counted."""
        if not self.functions:
            return False
        index = self.counts[op]
        self.counts[op] += 1
        if self.target is None:
            name, lines = self.functions[-1]
            line = self.get_metadata(PositionProvider, node).start.line
            self.sites.append(Site(self.path, op, index, line, name, lines))
            return False
        if self.target == (op, index):
            self.applied = True
            return True
        return False

    def leave_ComparisonTarget(self, original: cst.ComparisonTarget, updated: cst.ComparisonTarget) -> cst.ComparisonTarget:
        flip = _COMPARE_FLIP.get(type(updated.operator))
        if flip is not None and self._hit("flip_compare", original):
            return updated.with_changes(operator=_operator(flip, updated.operator))
        return updated

    def leave_BooleanOperation(self, original: cst.BooleanOperation, updated: cst.BooleanOperation) -> cst.BaseExpression:
        if self._hit("flip_boolean", original):
            new = cst.Or if isinstance(updated.operator, cst.And) else cst.And
            return updated.with_changes(operator=_operator(new, updated.operator))
        return updated

    def leave_UnaryOperation(self, original: cst.UnaryOperation, updated: cst.UnaryOperation) -> cst.BaseExpression:
        if isinstance(updated.operator, cst.Not) and self._hit("flip_boolean", original):
            return updated.expression.with_changes(lpar=updated.lpar, rpar=updated.rpar) if updated.lpar else updated.expression
        return updated

    def leave_Integer(self, original: cst.Integer, updated: cst.Integer) -> cst.BaseExpression:
        if self._hit("change_constant", original):
            value = int(updated.value, 0)
            return updated.with_changes(value=str({0: 1, 1: 0}.get(value, value + 1)))
        return updated

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if updated.value in ("True", "False") and self._hit("change_constant", original):
            return updated.with_changes(value="False" if updated.value == "True" else "True")
        return updated

    def leave_If(self, original: cst.If, updated: cst.If) -> Union[cst.BaseStatement, cst.RemovalSentinel]:
        if self._hit("drop_branch", original):
            return updated.with_changes(orelse=None) if updated.orelse is not None else cst.RemoveFromParent()
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        args = updated.args
        if _is_range(updated) and args and all(a.keyword is None and not a.star for a in args) and len(args) <= 2:
            if self._hit("shift_bound", original):
                stop = 0 if len(args) == 1 else 1
                new = args[stop].with_changes(value=_plus(args[stop].value, -1))
                return updated.with_changes(args=[*args[:stop], new, *args[stop + 1:]])
        if len(args) >= 2 and all(a.keyword is None and not a.star for a in args[:2]):
            if _differs(args[0].value, args[1].value) and self._hit("swap_args", original):
                first, second = args[0].with_changes(value=args[1].value), args[1].with_changes(value=args[0].value)
                return updated.with_changes(args=[first, second, *args[2:]])
        return updated

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.BaseSmallStatement:
        if updated.value is not None and self._hit("remove_return", original):
            return cst.Expr(value=updated.value)
        return updated

    def leave_Slice(self, original: cst.Slice, updated: cst.Slice) -> cst.Slice:
        bound = "upper" if updated.upper is not None else "lower" if updated.lower is not None else None
        if bound is not None and self._hit("shift_bound", original):
            return updated.with_changes(**{bound: _plus(getattr(updated, bound), 1)})
        return updated


def _operator(kind: type, old: cst.CSTNode) -> cst.CSTNode:
    """A new operator node of `kind` keeping the old one's whitespace."""
    return kind(whitespace_before=old.whitespace_before, whitespace_after=old.whitespace_after)  # type: ignore[attr-defined]


def _plus(expr: cst.BaseExpression, delta: int) -> cst.BaseExpression:
    if isinstance(expr, cst.Integer):
        return cst.Integer(str(int(expr.value, 0) + delta))
    op = cst.Add() if delta > 0 else cst.Subtract()
    left = expr if not isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation, cst.IfExp, cst.Lambda)) else \
        expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.BinaryOperation(left=left, operator=op, right=cst.Integer(str(abs(delta))))


def _is_range(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == "range"


def _differs(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    return not a.deep_equals(b)


def sites(path: str, source: str) -> list[Site]:
    """Every rewritable node of `source` (the file at repository-relative `path`) inside a function."""
    mutator = _Mutator(path, None)
    MetadataWrapper(cst.parse_module(source)).visit(mutator)
    return mutator.sites


def apply(source: str, site: Site) -> str | None:
    """`source` with `site` rewritten, or None when the rewrite is a no-op or does not compile."""
    mutator = _Mutator(site.path, (site.operator, site.index))
    new = cst.parse_module(source).visit(mutator).code
    if not mutator.applied or new == source:
        return None
    try:
        compile(new, site.path, "exec")
    except SyntaxError:
        return None
    return new
