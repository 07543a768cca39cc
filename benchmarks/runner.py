"""The benchmarks' one runner: ``python -m benchmarks NAME [options]``; ``python -m benchmarks`` lists them.

Every benchmark is declared here as data (``REGISTRY``: name, one line, module, default arguments, the
results files it writes, its parts), so that one command line reaches them all; ``python -m
benchmarks.NAME`` is an alias of ``python -m benchmarks NAME`` for one release.

Every benchmark is a module with

* ``run(args, out)`` — the measurement: ``args`` the parsed options, ``out`` its ``Results`` (the
  JSON and Markdown files ``<out>/<name>.json``/``.md``, written with provenance by ``Results.write``;
  ``None`` for a benchmark that only prints: no ``results`` declared, no ``--out``);
* optionally ``arguments(parser)`` — its own options, beside the shared ones (``SHARED``: ``--out``,
  ``--name``, ``--quick``, ``--dtype``, ``--worlds``, ``--steps``, ``--seed``, ``--only``, ``--device``),
  which the runner parses once for every benchmark (``Benchmark.options`` says which it takes and
  their defaults);
* or, for a benchmark of parts (``Benchmark.parts``: workloads declared as data, run by ``--only``),
  ``part_<name>(args, res)`` per part, which adds that part's section to ``res`` (the results so far,
  read back from the JSON, so one part reruns and the others' results stay), and ``render(res)`` the
  Markdown of the whole; the runner writes both after every part.

None parses a command line or writes results of its own (``tests/test_benchmarks_runner.py`` reads their
source); ``mjcf_census`` keeps its earlier ``--out NAME``, the results' stem (``Benchmark.out_is_name``).
Benchmarks do not import each other: what two share lives in ``common.py`` (or the package).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from pathlib import Path

from experiments.provenance import command_line, stamp, write_json

RESULTS_DIR = Path(__file__).resolve().parent / "results"

# the shared options, parsed here once: name -> (flag, argparse keywords without the default)
SHARED = {
    "out": ("--out", dict(help="results folder (a path ending in the benchmark's name or in .json, as earlier commands "
                               "gave: its folder and stem)")),
    "name": ("--name", dict(help="results files' stem")),
    "quick": ("--quick", dict(action="store_true", help="a smoke run: tiny sizes, results in a temporary place")),
    "dtype": ("--dtype", dict(choices=["float32", "float64"], help="floating-point type")),
    "worlds": ("--worlds", dict(help="batch sizes (worlds), comma-separated")),
    "steps": ("--steps", dict(type=int, help="steps per rollout")),
    "seed": ("--seed", dict(type=int, help="random seed")),
    "only": ("--only", dict(help="comma-separated parts (cases) to run")),
    "device": ("--device", dict(choices=["cpu", "gpu"], help="JAX platform (before anything runs)")),
}


@dataclasses.dataclass(frozen=True)
class Part:
    """One workload of a benchmark of parts: run by ``part_<name>(args, res)``."""

    name: str
    about: str


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """One benchmark: ``python -m benchmarks NAME``."""

    name: str
    about: str  # one line
    results: tuple[str, ...] = ()  # the files its default run writes, under benchmarks/results/
    options: dict = dataclasses.field(default_factory=dict)  # shared options it takes: name -> default
    defaults: tuple[str, ...] = ()  # arguments put before the user's (the user's win)
    parts: tuple[Part, ...] = ()
    aliases: dict = dataclasses.field(default_factory=dict)  # --only names of several parts
    out_is_name: bool = False  # its --out NAME is the results' stem (--name), as it was; --out-dir the folder
    module: str = ""  # default: benchmarks.<name>

    @property
    def module_name(self) -> str:
        return self.module or f"benchmarks.{self.name}"


def _b(name, about, results=(), **kw):
    return Benchmark(name, about, tuple(results), **kw)


WORLDS_PARTS = (
    Part("stack", "ten boxes built face to face stand for 10 s: jaxcontact (float64, float32) and MuJoCo C"),
    Part("pyramid", "the 4-3-2-1 pyramid of boxes for 10 s against MuJoCo C"),
    Part("collision", "a box slides into a resting one: velocities and momentum, analytic and MuJoCo C"),
    Part("heapcheck", "16 boxes dropped and settled for 2 s: height and boxes on the ground, against MuJoCo C"),
    Part("mjspeed", "the heap, 1,000 steps at 64 and 256 worlds in MuJoCo C on 1 and 2 threads"),
    Part("heapspeed", "the heap in jaxcontact float32: speed, compile time, memory, the step's stage times"),
    Part("mjx", "the heap in MJX, in a child process with a time limit"),
    Part("mjcf", "the three example MJCF scenes, jaxcontact against MuJoCo C every 50 steps for 1 s"),
)

HEAP_PROBE_PARTS = (
    Part("creep", "MuJoCo C's heap after 2, 5 and 10 s"),
    Part("softness", "jaxcontact's heap with Scene.softness = 0"),
    Part("speculative", "jaxcontact's heap, no friction where φ > 0"),
    Part("mjhard", "MuJoCo C's heap as its contact gets harder"),
    Part("swap", "each engine continued from the other's settled heaps"),
    Part("reach", "jaxcontact's heap with speculative contacts only within a fixed margin"),
    Part("manifold", "can each engine's contacts hold jaxcontact's settled heaps?"),
)

REGISTRY = (
    _b("adjoint", "the velocity-form solve's backward pass: matrix-free GMRES adjoint against dense",
       ("adjoint.json", "adjoint.md"), options={"steps": 200, "seed": 2}),
    _b("arm_push_diagnosis", "why reverse mode misses central differences for the arm's early controls",
       ("arm_push_diagnosis.json", "arm_push_diagnosis.md"), options={"only": ""}),
    _b("arm_push_gradient", "gradients through an arm pushing a box against central differences",
       ("arm_push_gradient.json", "arm_push_gradient.md")),
    _b("arm_push_trajopt", "Adam on a two-link arm's torques so that it pushes a box to a goal",
       ("arm_push_trajopt.json", "arm_push_trajopt.md")),
    _b("billiards_gradient", "the billiards shot's gradient against central differences, disc and square",
       ("billiards_gradient.json", "billiards_gradient.md")),
    _b("breakdown", "where a box-throw rollout's time goes; how far a solver change moves the finals",
       ("breakdown_after.json", "breakdown.md"), options={"steps": 800, "seed": 0}),
    _b("call_path", "the step's frames down to a sweep, their parameter counts; where native code is chosen",
       ("call_path.json", "call_path.md")),
    _b("chain_stress", "random swings of the 3-link chain: non-finite or energy-gaining runs",
       ("chain_stress.json", "chain_stress.md"), options={"steps": 400, "dtype": "float32", "seed": 1}),
    _b("compile_count", "programs compiled and compile seconds of the users' commands",
       ("compile_count_after.json", "compile_count_after.md"),
       options={"only": "contactnets,impacts,dacm,simulate"}),
    _b("cone", "Coulomb's disc against the square and MuJoCo C's cones: slides, sweeps, speed",
       ("cone.json", "cone.md"), options={"only": "slides,rate"}),
    _b("cone_active_set", "an active-set polish of the sweeps' point at the throw's stuck steps (NumPy)",
       ("cone_active_set.json", "cone_active_set.md")),
    _b("cone_active_set_fd", "one step's dz/d(target) at the throw's stuck steps: central differences"),
    _b("cone_derivative", "where the implicit derivative of a sliding face goes wrong, disc and square",
       ("cone_derivative.json", "cone_derivative.md")),
    _b("cone_designs", "the designs for a face's normal split, side by side (float64, small cases)",
       ("cone_designs.json", "cone_designs.md"), options={"only": "newton,slides,rest,throw"}),
    _b("convex_pairs", "collision.convex_pair against a brute-force reference: φ's accuracy, cost per pair (printed)",
       options={"out": None, "seed": 0}),
    _b("dacm_speed", "the dacm law's step cost against vertex count and the Coulomb LCP",
       ("dacm_speed.json", "dacm_speed.md"), options={"steps": 20}),
    _b("faces", "faces at rest, the two doors and the heap's cost", ("faces.json",),
       options={"only": "rest,doors,heap"}),
    _b("fast_hits_scenes", "fast hits on and off on the slow scenes, 200 steps in float64, bitwise (printed)",
       options={"only": "scenes,speed", "worlds": "64", "steps": 500}),
    _b("friction_cone", "the pyramidal cone's friction against a sliding direction",
       ("friction_cone.json", "friction_cone.md"), options={"steps": 50}),
    _b("gpu_compare", "a GPU run's float32 finals against CPU float32 and float64 rollouts",
       ("gpu_accuracy.json", "gpu_accuracy.md"), options={"name": "gpu_accuracy"}),
    _b("gpu_run", "everything a GPU lease measures, in one process: jaxcontact on a GPU against MJX",
       ("gpu_run.json", "gpu_run.md", "finals.npz", "stress.json"),
       options={"out": None, "device": "gpu", "seed": 0, "steps": None}),
    _b("gradient_quality", "each gradient mode against the loss smoothed at the scale of real data",
       ("gradient_quality.json", "gradient_quality.md", "gradient_quality.npz"),
       options={"steps": 150, "seed": 7}),
    _b("heap_cpu", "where the heaps' steps go in CPU seconds: compiler options alternated, sweeps, program size",
       ("heap_cpu.json", "heap_cpu.md"), options={"only": "boxes16,mixed16", "worlds": "64"}),
    _b("heap_probe", "probes of why jaxcontact's settled heaps stand taller than MuJoCo C's",
       ("heap_probe.json", "heap_probe.md"), parts=HEAP_PROBE_PARTS),
    _b("heap_profile", "a jax.profiler trace of one compiled batch of 16-box heaps (printed)",
       options={"worlds": "64", "steps": 200}),
    _b("hull_sizes", "mesh hulls' vertex counts in public MJCF files and what a hull's size costs",
       ("hull_sizes.json", "hull_sizes.md")),
    _b("joint_drift", "how far a swinging chain's joints drift apart under Baumgarte stabilisation",
       ("joint_drift.json", "joint_drift.md")),
    _b("joint_rows", "ball joints, composite joints, welds and equalities against MuJoCo C",
       ("joint_rows.json", "joint_rows.md")),
    _b("memory", "device memory per body of a final-state rollout (XLA's memory analysis)", ("memory.json",),
       options={"steps": 800}),
    _b("mixed_speed", "heaps of round and mixed bodies against MuJoCo C, both cores",
       ("mixed_speed.json", "mixed_speed.md"), options={"only": "boxes16,spheres64,mixed16", "worlds": "256",
                                                         "steps": 1000}),
    _b("mjcf_census", "a census of public MJCF files: what MuJoCo compiles and worlds.from_mujoco loads",
       ("mjcf_census.json", "mjcf_census.md"), out_is_name=True),
    _b("overlap_census", "how often a two-body throw starts a step inside, per pair of kinds",
       ("overlap_census.json", "overlap_census.md"), options={"steps": 250, "seed": 0, "dtype": "float64"}),
    _b("passive_arm", "a damped, sprung two-link arm against MuJoCo C", ("passive_arm.md",)),
    _b("precision", "float32 against float64 final states of the same box throws", ("precision.json",),
       options={"steps": 800, "seed": 0}),
    _b("robot_speed", "a four-legged robot and a 7-joint arm against MuJoCo C and MJX",
       ("robot_speed.json", "robot_speed.md"), options={"seed": 0}),
    _b("round_profile", "where a step of the round and mixed heaps spends its time",
       ("round_profile.json", "round_profile.md"), options={"only": "boxes16,spheres64,mixed16", "worlds": "32"}),
    _b("round_shapes", "round shapes against the ground over long horizons, float64 and float32",
       ("round_shapes.json", "round_shapes.md")),
    _b("same_physics", "the finals of fixed workloads, saved before a refactor and compared after"),
    _b("scenery", "fixed scenery against the hand calculation and MuJoCo C", ("scenery.json",),
       options={"only": "ramp,table,bin"}),
    _b("soft_speed", "what MuJoCo's soft constraints cost a robot's step against the hard rows",
       ("soft_speed.json", "soft_speed.md"), options={"steps": 200, "dtype": "float32"}),
    _b("side_by_side", "three mixed scenes in jaxcontact, MuJoCo C and Bullet",
       ("side_by_side.json", "side_by_side.md"), options={"only": "bin,ramp,dominoes"}),
    _b("small_rows", "where the dense solve and its unrolled sweep pay", ("small_rows.json", "small_rows.md"),
       options={"only": ""}),
    _b("solver_warnings", "how often the contact solve stops at its sweep cap on random throws",
       ("solver_warnings_float32.json", "solver_warnings_float32.md"),
       options={"seed": 7, "steps": 800, "dtype": "float32"}),
    _b("stress", "10,000 boxes, degenerate and extreme starts; heaps of 16 boxes", ("stress.json", "stress.md"),
       options={"steps": 800, "seed": 0, "device": None, "dtype": "float64"}),
    _b("sysid_random_starts", "system identification from random starts, per gradient mode",
       ("sysid_random_starts.json", "sysid_random_starts.md"), options={"steps": 400}),
    _b("throughput", "the box-throw workload against MuJoCo C and MJX, one core and all",
       ("throughput.json", "throughput.md"),
       options={"steps": 800, "quick": False, "device": None, "seed": 0}),
    _b("tier_cpu", "CPU seconds of each test of the default tier (printed; also a pytest plugin)"),
    _b("two_box_throws", "a box thrown onto a resting box: how often a step starts inside",
       ("two_box_throws.json", "two_box_throws.md"),
       options={"steps": 250, "seed": 0, "dtype": "float64"}),
    _b("world_degenerate", "which steps a degenerate-contact flag would mark, by criterion and threshold (printed)"),
    _b("world_gradients", "gradients through worlds at the default settings against central differences",
       ("world_gradients.json", "world_gradients.md"), options={"only": "push,train,drop,slide"}),
    _b("world_law_defaults", "candidate default laws for worlds: the heap's forward cost",
       ("world_law_defaults.json", "world_gradients_defaults.md")),
    _b("world_solvers", "three ways to sweep a world's contact problem, side by side",
       ("world_solvers.json", "world_solvers.md"), options={"steps": 50, "quick": False}),
    _b("worlds", "worlds of many bodies against MuJoCo C and MJX: stacks, cross-checks, the heap's speed",
       ("worlds.json", "worlds.md"), parts=WORLDS_PARTS,
       aliases={"crosscheck": ("collision", "heapcheck"), "heap": ("heapcheck", "mjspeed", "heapspeed", "mjx")}),
)

BY_NAME = {b.name: b for b in REGISTRY}


def find(name: str) -> Benchmark:
    if name not in BY_NAME:
        raise SystemExit(f"python -m benchmarks: no benchmark {name!r} (python -m benchmarks lists them)")
    return BY_NAME[name]


class Results:
    """A benchmark's results files: ``<folder>/<stem>.json`` and ``.md``; the JSON gets ``provenance``
    (commit, uncommitted changes, command: ``experiments.provenance``) when written."""

    def __init__(self, folder, stem: str):
        self.folder, self.stem = Path(folder), stem
        self.json = self.folder / f"{stem}.json"
        self.md = self.folder / f"{stem}.md"

    def tagged(self, tag: str) -> "Results":
        """The results ``<stem>_<tag>`` beside these (these if ``tag`` is empty): a benchmark's ``--tag``."""
        return Results(self.folder, f"{self.stem}_{tag}") if tag else self

    def path(self, suffix: str) -> Path:
        """A file beside them: ``<folder>/<stem><suffix>`` (``"_partial.npz"``, ``".npz"``)."""
        return self.folder / f"{self.stem}{suffix}"

    def load(self) -> dict:
        """The results written so far (empty if none), without their provenance (rewritten on write)."""
        if not self.json.exists():
            return {}
        res = json.loads(self.json.read_text())
        res.pop("provenance", None)
        return res

    def write(self, doc: dict, markdown: str | None = None) -> None:
        write_json(self.json, doc)
        if markdown is not None:
            self.md.write_text(markdown if markdown.endswith("\n") else markdown + "\n")


def run_info() -> dict:
    """Date, command, commit, load average and x64 of this run (a part's ``run`` record)."""
    from .common import machine_info

    info = machine_info("benchmarks", command=command_line())
    return {k: info[k] for k in ("date", "command", "git_commit", "load_average_at_start", "jax_x64")}


def parser(bench: Benchmark, module=None) -> argparse.ArgumentParser:
    """The command line of ``bench``: the shared options it takes (with its defaults), then its own."""
    module = module or importlib.import_module(bench.module_name)
    doc = (module.__doc__ or bench.about).strip()
    ap = argparse.ArgumentParser(prog=f"python -m benchmarks {bench.name}", description=doc.split("\n\n")[0],
                                 epilog=f"results: {', '.join(bench.results) or 'printed'}")
    options = dict(bench.options)
    if bench.results or "out" in options:  # a benchmark that only prints takes no --out
        options.setdefault("out", str(RESULTS_DIR))
        options.setdefault("name", bench.name)
    if bench.parts:
        options.setdefault("only", "all")
    for key, default in options.items():
        flags, kw = SHARED[key]
        flags, kw = ((flags,) if isinstance(flags, str) else flags), dict(kw)
        if bench.out_is_name and key == "out":  # --out is --name's other spelling (below): the folder is --out-dir
            ap.add_argument("--out-dir", dest="out", default=default, help="results folder (default: %(default)s)")
            continue
        if bench.out_is_name and key == "name":
            flags, kw["help"] = ("--name", "--out"), "results files' stem (--out: the same, this benchmark's spelling)"
        if key == "only" and bench.parts:
            kw["help"] = (f"comma-separated parts: {', '.join(p.name for p in bench.parts)}"
                          + (f"; or {', '.join(bench.aliases)}" if bench.aliases else "") + " (default: all)")
        if kw.get("action") == "store_true":
            ap.add_argument(*flags, **kw)
        else:
            kw["help"] += " (default: %(default)s)"
            ap.add_argument(*flags, default=default, **kw)
        if key == "out":  # earlier commands' spelling: always the folder itself
            ap.add_argument("--out-dir", dest="out_dir", default=None, help="results folder (always a folder)")
    if hasattr(module, "arguments"):
        module.arguments(ap)
    return ap


def parts_of(bench: Benchmark, spec: str) -> list[Part]:
    """The parts named by ``--only`` (names or aliases; "all" every part), in the order given."""
    by = {p.name: p for p in bench.parts}
    aliases = {"all": tuple(by), **bench.aliases}
    out = []
    for name in (s.strip() for s in spec.split(",") if s.strip()):
        for q in aliases.get(name, (name,)):
            if q not in by:
                raise SystemExit(f"--only: unknown part {q!r} (parts: {', '.join(by)}; aliases: {', '.join(aliases)})")
            if by[q] not in out:
                out.append(by[q])
    return out


def run(name: str, argv=None, module=None):
    """Run benchmark ``name`` with ``argv`` (the arguments after its name)."""
    bench = find(name)
    stamp()  # the code's commit as the run starts (a commit made while it runs is not its code)
    module = module or importlib.import_module(bench.module_name)
    argv = list(bench.defaults) + list(sys.argv[2:] if argv is None else argv)
    args = parser(bench, module).parse_args(argv)
    args.command = command_line()  # as run: python -m benchmarks NAME ... (or the alias's form)
    if getattr(args, "device", None):
        from .common import select_platform

        select_platform(args.device)
    out = None  # a benchmark that only prints
    if getattr(args, "out_dir", None) is not None:
        args.out = args.out_dir
    elif getattr(args, "out", None) is not None:
        given = Path(args.out)
        # a required --out (gpu_run's) is the run's folder; so is an out_is_name benchmark's --out-dir
        folder_only = bench.options.get("out", "") is None or bench.out_is_name
        if given.suffix == ".json" or (not folder_only and not given.is_dir() and given.name.startswith(bench.name)):
            # an earlier command's --out, the results' path (without or with .json): its folder and stem
            args.out = str(given.parent)
            args.name = given.with_suffix("").name if given.suffix == ".json" else given.name
    if getattr(args, "out", None) is not None:
        if getattr(args, "quick", False) and args.out == str(RESULTS_DIR):
            import tempfile

            args.out = tempfile.mkdtemp(prefix=f"bench_{bench.name}_")  # a smoke run keeps the results as they are
        out = Results(args.out, args.name)
    if hasattr(module, "prepare"):  # work before the parts (e.g. a child process's own entry), may end the run
        if module.prepare(args, out):
            return None
    if not bench.parts:
        return module.run(args, out)
    res = out.load()
    for part in parts_of(bench, args.only):
        getattr(module, f"part_{part.name}")(args, res)
        out.write(res, module.render(res))  # after every part: a later part's failure keeps the earlier ones
        res.pop("provenance", None)
    print(module.render(res))
    return res


def alias(module) -> None:
    """``python -m benchmarks.NAME args``: the same as ``python -m benchmarks NAME args`` (for one release)."""
    run(module.__spec__.name.rsplit(".", 1)[-1], sys.argv[1:], module)


def listing() -> str:
    width = max(len(b.name) for b in REGISTRY)
    lines = ["python -m benchmarks NAME [--help] ...", ""]
    for b in REGISTRY:
        lines.append(f"  {b.name:<{width}}  {b.about}")
        lines += [f"  {'':<{width}}    --only {p.name}: {p.about}" for p in b.parts]
    return "\n".join(lines)


def check() -> list[str]:
    """Every declared benchmark imports and its command line parses ``--help``; every module of the
    folder is declared. ``name: ok`` per benchmark, or what failed."""
    import contextlib
    import io

    lines = []
    here = Path(__file__).resolve().parent
    modules = {p.stem for p in here.glob("*.py")} - {"__init__", "__main__", "common", "runner"}
    lines += [f"{m}: not declared in benchmarks/runner.py REGISTRY" for m in sorted(modules - set(BY_NAME))]
    for b in REGISTRY:
        try:
            module = importlib.import_module(b.module_name)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
                try:
                    parser(b, module).parse_args(["--help"])
                    raise RuntimeError("--help did not exit")
                except SystemExit as e:
                    if e.code not in (0, None):
                        raise RuntimeError(f"--help exited {e.code}") from None
            if "usage:" not in buf.getvalue():
                raise RuntimeError("--help printed no usage")
            missing = [p.name for p in b.parts if not hasattr(module, f"part_{p.name}")]
            if missing or not hasattr(module, "run" if not b.parts else "render"):
                raise RuntimeError(f"missing: {missing or 'run'}")
            lines.append(f"{b.name}: ok")
        except Exception as e:  # noqa: BLE001 - reported per benchmark
            lines.append(f"{b.name}: FAILED {type(e).__name__}: {e}")
    return lines


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "--list"):
        print(listing())
        return 0
    if argv[0] == "--check":
        lines = check()
        print("\n".join(lines))
        return 0 if all(line.endswith(": ok") for line in lines) else 1
    run(argv[0], argv[1:])
    return 0
