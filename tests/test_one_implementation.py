"""One implementation each of dead-code elimination, CSE, constant folding and purity (issue 12).

The package is read as source: every function whose name says it does one of these jobs must live
in that job's one module, or be a few lines that hand the work to it (torch.fx's
``Graph.eliminate_dead_code`` and ``Node.is_impure`` keep their API that way).
"""
import ast
import pathlib
import re

import ember
import ember.fx.passes
import ember.jit.passes

PACKAGE = pathlib.Path(ember.__file__).parent

# job -> (what a function doing it is called, the module that does it, what a delegation names)
JOBS = {
    "dead-code elimination": (r"dead_code|(^|_)dce(_|$)", "fx/passes/dead_code_elimination.py",
                              "dead_code_elimination"),
    "common-subexpression elimination": (r"subexpression|(^|_)cse(_|$)",
                                         "fx/passes/common_subexpression_elimination.py", "properties"),
    "constant folding": (r"fold_const|const_fold|constant_prop|constant_folding", "fx/passes/constant_propagation.py",
                         "constant_propagation"),
    "purity": (r"impure|side_effect|is_pure|writes_memory|is_random|cse_safe|mutated_inputs|is_deterministic",
               "fx/passes/purity.py", r"purity|properties"),
}
DELEGATION_MAX_LINES = 12


def _definitions():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path.relative_to(PACKAGE).as_posix(), node, ast.get_source_segment(path.read_text(), node)


DEFINITIONS = list(_definitions())


def _is_module_flag(rel, node):
    """torch.fx's ``Module._is_impure`` flag on nn modules: data for the oracle, not an oracle."""
    return rel.startswith("nn/") and node.name == "_is_impure"


def test_each_job_is_done_in_one_module():
    for job, (pattern, home, delegate) in JOBS.items():
        elsewhere = []
        for rel, node, source in DEFINITIONS:
            if rel == home or not re.search(pattern, node.name) or _is_module_flag(rel, node):
                continue
            lines = source.count("\n") + 1
            if lines > DELEGATION_MAX_LINES or not re.search(delegate, source):
                elsewhere.append(f"{rel}:{node.lineno} {node.name}")
        assert not elsewhere, f"{job} is implemented outside {home}: {elsewhere}"
        assert any(rel == home for rel, _, _ in DEFINITIONS), home


def test_the_old_copies_are_gone():
    for old in ("jit/passes/dead_code_elimination.py", "jit/passes/common_subexpression_elimination.py",
                "jit/passes/constant_propagation.py", "jit/passes/purity.py", "fx/passes/dead_code.py",
                "fx/passes/cse.py", "fx/passes/const_fold.py", "fx/passes/op_properties.py"):
        assert not (PACKAGE / old).exists(), old


def test_the_jit_pipeline_is_a_list_of_the_shared_passes():
    pipeline = ember.jit.passes.PIPELINE
    assert all(callable(p) for p in pipeline)
    for shared in (ember.fx.passes.fold_constants, ember.fx.passes.eliminate_common_subexpressions,
                   ember.fx.passes.eliminate_dead_code):
        assert shared in pipeline
    assert "importlib" not in (PACKAGE / "jit/executor/graph_executor.py").read_text()


def test_no_walker_builds_its_own_table_of_public_names():
    """Names of ember's functions come from ember.ops.registry (public_name / op_of), not from
    tables of ``id(fn)`` built by walking namespaces or from the module a function was written in."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(PACKAGE).as_posix()
        if re.search(r"table(\.setdefault)?\[?\(?id\((value|fn)\)", text) or "ember.ops.table.pointwise\"" in text:
            offenders.append(rel)
    assert not offenders
