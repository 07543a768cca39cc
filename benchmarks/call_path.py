"""The step's call path to a sweep: every package frame between ``worlds.pipeline.step_stages`` and
the projected Gauss–Seidel sweep, with each function's parameter count, and where the package
decides between a fused kernel and pure JAX (``native.available()``).

The frames are recorded, not read off the source: ``sys.setprofile`` watches the tracing of one
step (``jax.make_jaxpr``, nothing compiled) and keeps the call stack at the first entry into a
sweep; the frames counted are the package's own (``jaxcontact/``), from ``step_stages`` down.
A parameter count is the function's positional and keyword parameters (``self`` not counted;
``*args`` counted as one). Three workloads, one per solve route of the default law:

* ``body``: one box thrown onto the ground (``jc.step``: the per-body route, the dense solve);
* ``heap``: ``worlds.scenes.heap(16)`` (the coupled route, velocity form, the fused kernel);
* ``heap_sequential``: the same with ``LCPSettings.sweeps = "sequential"`` (the pure-JAX sweeps).

    python -m benchmarks call_path            # a few seconds

Writes ``benchmarks/results/call_path.{json,md}`` (``--out`` another stem).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import jaxcontact as jc  # noqa: E402
from jaxcontact.worlds import scenes  # noqa: E402

PACKAGE = Path(jc.__file__).resolve().parent
START = "step_stages"
SWEEPS = {"_sweep", "_coloured_sweep", "_pgs_sweep", "_pgs_sweep_disc", "pgs_sweeps", "_unrolled_row",
          "solve_relaxed_lcp"}  # the sweeps (dense, velocity, coloured, the kernel's binding) and the Newton solve


def _params(code) -> int:
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    n = len(names) - (1 if names[:1] in (("self",), ("cls",)) else 0)
    return n + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs


def record(fn, *args) -> list[dict]:
    """The package frames from ``START`` to the first sweep entered while ``fn(*args)`` is traced."""
    found = []

    def prof(frame, event, arg):
        if event != "call" or found or frame.f_code.co_name not in SWEEPS:
            return
        if not frame.f_code.co_filename.startswith(str(PACKAGE)):
            return
        stack, f = [], frame
        while f is not None:
            if f.f_code.co_filename.startswith(str(PACKAGE)):
                stack.append(f)
            f = f.f_back
        stack.reverse()
        names = [s.f_code.co_name for s in stack]
        if START in names:
            stack = stack[names.index(START):]
        found.append([dict(function=s.f_code.co_qualname,
                           module=str(Path(s.f_code.co_filename).resolve().relative_to(PACKAGE.parent))
                           .removesuffix(".py").replace("/", "."),
                           parameters=_params(s.f_code)) for s in stack])

    sys.setprofile(prof)
    try:
        jax.make_jaxpr(fn)(*args)
    finally:
        sys.setprofile(None)
    if not found:
        raise RuntimeError("no sweep was entered")
    return found[0]


def workloads():
    law = jc.CoulombLCP()
    model = jc.Model(law=law, dt=0.002, max_contacts=4)
    params = jc.Params(body=jc.shapes.box(0.1, 0.37), ground=jc.Ground.flat(), law=law.init_params(mu=0.3))
    state = jc.make_state(pos=jnp.array([0.0, 0.0, 0.049]), vel=jnp.array([1.0, 0.0, -0.5]))
    yield "body", (lambda s: jc.step(model, params, s)), state
    scene, wparams, wstate = scenes.heap(16)
    for name, sweeps in (("heap", None), ("heap_sequential", "sequential")):
        wmodel = scenes.model(sweeps=sweeps)
        yield name, (lambda s, m=wmodel: jc.worlds.step(m, scene, wparams, s)), wstate


def decisions() -> list[str]:
    """``module:line`` of every call of ``available()`` (``jaxcontact.native``'s) in the package."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "native":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "available":
                out.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return out


def run(args, results) -> int:
    res = {}
    lines = ["# The step's call path to a sweep", "",
             "`python -m benchmarks call_path`: the package frames from `worlds.pipeline.step_stages` to the first "
             "sweep, recorded while one step is traced (parameters: positional and keyword, `self` not counted, "
             "`*args` one).", ""]
    for name, fn, arg in workloads():
        path = record(fn, arg)
        modules = sorted({f["module"] for f in path})
        res[name] = dict(frames=path, depth=len(path), modules=modules,
                         max_parameters=max(f["parameters"] for f in path),
                         over_six=[f["function"] for f in path if f["parameters"] > 6])
        lines += [f"## {name}: {len(path)} frames in {len(modules)} modules, at most "
                  f"{res[name]['max_parameters']} parameters", "", "| # | function | module | parameters |",
                  "| --- | --- | --- | --- |"]
        lines += [f"| {i} | `{f['function']}` | `{f['module']}` | {f['parameters']} |" for i, f in enumerate(path)]
        lines.append("")
        print(f"{name}: {len(path)} frames in {len(modules)} modules, over 6 parameters: {res[name]['over_six']}")
    res["native_available_calls"] = decisions()
    lines += ["## Where a fused kernel or pure JAX is chosen (`native.available()` calls)", "",
              *[f"- `{d}`" for d in res["native_available_calls"]], ""]
    print("native.available() called at:", ", ".join(res["native_available_calls"]))
    if results is not None:
        results.write(res, "\n".join(lines))
    return 0


if __name__ == "__main__":
    from .runner import alias

    alias(sys.modules[__name__])
