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


# ---------------------------------------------------------------------------------------------
# one Python code generator, one TorchScript printer (issue 12 item 4)
# ---------------------------------------------------------------------------------------------
# Modules that compile Python source they wrote, and what that source is made from. Graph code
# (fx GraphModules, jit plans, next the fuser's wrappers) is written by fx/_codegen.py alone.
EXEC_SITES = {
    "fx/_codegen.py": "graphs: GraphModule.forward and the jit's plans",
    "ops/codegen.py": "the bindings of the op table's rows (and, through compile_function, the overlap checks and the autograd recording kernels)",
    "_core/dispatch.py": "dispatch.fast_call, compiled from the one text of the binding fast path",
    "_dynamo/guards.py": "a compiled frame's guard check",
    "_dynamo/eval_frame.py": "the wrapper that enters a compiled frame",
    "_functorch/_aot_fast_path.py": "AOT autograd's spec matcher, the guard on a compiled graph's inputs",
    "_cuda/kernels.py": "the CUDA variants of the kernel files: their own source, compiled again against CuPy",
    "jit/executor/fused_kernel.py": "a fusion group's fast path: the in-line guard on its inputs and the kernel launch",
}


def _compiles_source(text: str) -> bool:
    return bool(re.search(r"\bexec\(|\bcompile\([^)]*[\"']exec[\"']", text))


def test_one_python_code_generator():
    sites = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py") if _compiles_source(path.read_text())}
    assert sites == set(EXEC_SITES), f"Python source is compiled outside the known generators: {sites - set(EXEC_SITES)}"
    # the jit's plans come from the graph through fx's generator, not from an instruction list
    codegen = (PACKAGE / "jit/executor/codegen.py").read_text()
    assert "generate_python_code" in codegen and not re.search(r"\bJUMP|\bInstr\b|\.instructions\b", codegen)
    readers = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
               if re.search(r"\bJUMP_IF_FALSE\b|\bLOOP_TEST\b", path.read_text())}
    assert readers == {"jit/executor/instructions.py", "jit/executor/interpreter.py"}, readers


def test_generated_plans_run_the_graph_not_the_instruction_list(monkeypatch):
    import ember.jit.executor.graph_executor as graph_executor
    from ember.jit import ir
    built = []
    compile_graph = graph_executor.compile_graph
    monkeypatch.setattr(graph_executor, "compile_graph", lambda *a, **k: built.append(a) or compile_graph(*a, **k))
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=ir.TensorType())
    g.output(ir.call(g, ember.tanh, (x,), type_=ir.TensorType()))
    ex = graph_executor.GraphExecutor(g)
    for _ in range(3):   # profiling run, then the optimised plan
        ex.run(ember.ones(2))
    assert not built                                        # running never builds the instruction list...
    (plan,) = ex.debug_state()["plans"].values()
    assert built and "CALL" in str(plan) and "def " in plan.source    # ...get_debug_state shows it


def test_one_torchscript_printer():
    """TorchScript graph text (`graph(...)`, `prim::Constant[value=...]`) is written in one module."""
    writers = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
               if re.search(r"prim::Constant(\[value=)?\{|\"graph\(\"", path.read_text())}
    assert writers == {"jit/ir/printer.py"}, writers
    assert not (PACKAGE / "jit/_ir_text.py").exists()


def test_one_definition_each():
    """One Argument (op schemas and scripted signatures), one specialize_types, one reader of a
    multi-output node's getitems, no id(fn) name table."""
    for name, pattern in (("Argument", r"^class Argument\b"), ("specialize_types", r"^def specialize_types\b"),
                          ("output getitems", r"^def (output_getitems|outputs_of)\b"),
                          ("NO_DEFAULT", r"^NO_DEFAULT\s*=")):
        found = [path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
                 if re.search(pattern, path.read_text(), re.M)]
        assert len(found) == 1, (name, found)
    assert not any("_public_name_table" in path.read_text() for path in PACKAGE.rglob("*.py"))
