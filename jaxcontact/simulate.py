"""``jaxcontact simulate``: batches of random throws, saved to .npz, optional PNG plot.

The file records its sample period and the engine's time step (``sample_period`` = ``engine_dt``
= ``dt``: every engine step is written), so ``jaxcontact sysid`` fits it with the engine step it
was made with."""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

SHAPES = ("box", "pentagon", "box2d", "link")

# The distal link of the articulated chain (jaxcontact.chains): 0.2 x 0.05 x 0.05 m box, same
# density as the 0.1 m / 0.37 kg box (370 kg/m^3).
LINK_SIZE = (0.2, 0.05, 0.05)
LINK_MASS = 0.185


class CompileClock:
    """Wall seconds of a block and the part of them JAX spent compiling (tracing, lowering, XLA's
    compile, reading the persistent cache: its ``jax.monitoring`` duration events): ``compile``,
    ``run`` (the rest), ``programs`` (programs traced). ``with CompileClock() as clock: ...``."""

    EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
              "/jax/core/compile/backend_compile_duration", "/jax/compilation_cache/cache_retrieval_time_sec")

    def __init__(self):
        self.compile, self.wall, self.programs = 0.0, 0.0, 0

    def _on(self, event, duration, **kwargs):
        if self._active and event in self.EVENTS:
            self.compile += duration
            self.programs += event == self.EVENTS[0]

    def __enter__(self):
        import jax

        self._listener, self._active = self._on, True
        jax.monitoring.register_event_duration_secs_listener(self._listener)
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        import jax

        self.wall = time.perf_counter() - self._t0
        self._active = False  # an older jax (the minimum, 0.7) has no unregister: the listener stays, silent
        unregister = getattr(jax.monitoring, "unregister_event_duration_listener", None)
        if unregister is not None:
            unregister(self._listener)
        return False

    @property
    def run(self) -> float:
        return max(self.wall - self.compile, 0.0)

    def summary(self) -> str:
        """"compile 11.9 s, run 0.4 s" for the command's summary line."""
        return f"compile {self.compile:.1f} s, run {self.run:.1f} s"


def chunk_length(steps: int, chunk: int) -> int:
    """The steps every chunk of a chunked rollout runs: ``chunk``, or ``steps`` when fewer. One
    length, so the rollout compiles once: the last chunk runs the whole length too and its extra
    steps are dropped (a shorter last chunk would compile a second program, as long as the first)."""
    return min(int(chunk), int(steps))


def make_body(shape: str):
    from . import shapes

    if shape == "box":
        return shapes.box(0.1, 0.37), 4
    if shape == "pentagon":
        return shapes.regular_prism(5, 0.06, 0.1, 0.37), 5
    if shape == "box2d":
        return shapes.box2d((0.1, 0.1), 0.37), 2
    if shape == "link":
        return shapes.box(LINK_SIZE, LINK_MASS), 4
    raise ValueError(f"--shape must be one of {SHAPES}, got {shape!r}")


def simulate_throws(shape: str, throws: int, steps: int, seed: int, mu: float = 0.18,
                    restitution: float = 0.0, dt: float = 0.002, chunk: int = 100, progress: bool = True,
                    max_sweeps: int | None = None, solver: list | None = None):
    """Random throws of ``shape``; returns (model, params, trajectory as (N, steps+1, D) array).
    max_sweeps: the contact solver's sweep cap (``LCPSettings.max_iter``; None: the law's default).
    solver: a list that receives, per chunk, the steps' flags and residuals ((N, chunk) each)."""
    import jax
    from tqdm.auto import tqdm

    from .dynamics import rollout
    from .laws import CoulombLCP
    from .solvers import LCPSettings
    from .states import random_throws
    from .types import Ground, Model, Params
    from .validation import validate_inputs

    if throws < 1 or steps < 1:
        raise ValueError("--throws and --steps must be >= 1")
    body, max_contacts = make_body(shape)
    planar = shape == "box2d"
    law = CoulombLCP() if max_sweeps is None else CoulombLCP(solver=LCPSettings(max_iter=max_sweeps))
    model = Model(law=law, dt=dt, max_contacts=max_contacts)
    params = Params(body=body, ground=Ground.flat(2 if planar else 3), law=law.init_params(mu=mu, restitution=restitution))
    state = random_throws(jax.random.PRNGKey(seed), throws, planar=planar)
    validate_inputs(params, state, batched=True)
    out = [np.asarray(state.to_array())]

    @functools.partial(jax.jit, static_argnums=1)
    def run_chunk(state, n):  # batch_rollout's vmap (chunk_size=None), keeping of the infos the solver's flags
        def one(s):
            traj, info = rollout(model, params, s, n, with_info=True)
            return traj, info.flags, info.residual

        return jax.vmap(one)(state)

    done, length = 0, chunk_length(steps, chunk)
    with tqdm(total=steps, desc=f"simulate {shape} x{throws}", unit="step", disable=not progress) as bar:
        while done < steps:
            n = min(length, steps - done)  # every chunk runs `length` steps (one program); the last keeps n
            traj, flags, residual = run_chunk(state, length)
            if solver is not None:
                solver.append((np.asarray(flags)[:, :n], np.asarray(residual)[:, :n]))
            arr = np.asarray(traj.to_array())  # (N, length+1, D)
            out.append(arr[:, 1:n + 1].transpose(1, 0, 2))
            state = jax.tree_util.tree_map(lambda x: x[:, n], traj)
            done += n
            bar.update(n)
    states = np.concatenate([out[0][None], *out[1:]], axis=0).transpose(1, 0, 2)
    return model, params, states


SCENES = ("stack", "pyramid", "heap", "cradle")

# the throws' settings when an option is not given (a scene has its own: ``worlds.scenes``)
THROW_DEFAULTS = {"shape": "box", "throws": 100, "mu": 0.18, "restitution": 0.0, "dt": 0.002}


def parse_scene(spec: str):
    """``NAME:N`` (stack:10, pyramid:4, heap:16, cradle:5) → (name, N); refused by name otherwise."""
    name, _, count = spec.partition(":")
    if name not in SCENES:
        raise argparse.ArgumentTypeError(f"--scene must be one of {', '.join(s + ':N' for s in SCENES)}, got {spec!r}")
    try:
        n = int(count) if count else {"stack": 10, "pyramid": 4, "heap": 16, "cradle": 5}[name]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--scene {spec!r}: N must be an integer") from None
    if not (1 <= n <= (12 if name == "pyramid" else 64)) or (name == "cradle" and n < 2):
        raise argparse.ArgumentTypeError(f"--scene {spec!r}: N out of range (pyramid 1-12 levels, cradle 2-64, "
                                         "others 1-64 boxes)")
    return name, n


def simulate_scene(name: str, n: int, steps: int, seed: int = 0, chunk: int = 100, progress: bool = True,
                   mu: float | None = None, restitution: float | None = None, dt: float | None = None,
                   max_sweeps: int | None = None, residuals: list | None = None):
    """A world (``worlds.scenes``) for ``steps`` steps of the default world law (its sweep cap
    ``max_sweeps`` if given), in chunks of ``chunk`` steps for the progress bar (each chunk starts
    its solver's warm start from zero); mu, restitution, dt: the law's μ (every contact), ε and the
    time step (s), None: the scene's own (``worlds.scenes``; dt 0.002 s); returns (scene, model,
    params, states (steps + 1, N, 13), flags per step). ``residuals``: a list that receives the
    solver's residual per step (m/s). The chunks' own ``SolverWarning``s are left to the caller, who
    sees the whole rollout (``solver_warning``)."""
    import dataclasses
    import warnings

    import jax
    import jax.numpy as jnp
    from tqdm.auto import tqdm

    from . import worlds
    from .dynamics import SolverWarning
    from .worlds import scenes

    builders = {"stack": scenes.stack, "pyramid": scenes.pyramid, "cradle": scenes.cradle,
                "heap": lambda k: scenes.heap(k, key=jax.random.PRNGKey(seed))}
    scene, params, state = builders[name](n)
    law = params.law
    if mu is not None:
        law = law.replace(mu=jnp.full_like(law.mu, mu))
    if restitution is not None:
        law = law.replace(restitution=jnp.full_like(law.restitution, restitution))
    params = params.replace(law=law)
    world_law = scenes.DEFAULT_LAW
    if max_sweeps is not None:
        world_law = dataclasses.replace(world_law, solver=dataclasses.replace(world_law.solver, max_iter=max_sweeps))
    model = worlds.model(world_law) if dt is None else worlds.model(world_law, dt=dt)
    states, flags = run_world(model, scene, params, state, steps, chunk, progress, f"simulate {name}:{n}", residuals)
    return scene, model, params, states, flags


def run_world(model, scene, params, state, steps: int, chunk: int = 100, progress: bool = True, desc: str = "simulate",
              residuals: list | None = None, controls=None):
    """``steps`` steps of a world (``state`` (N, …)) or a batch of worlds (``state`` (W, N, …):
    ``worlds.batch_rollout``) in chunks of ``chunk`` steps for the progress bar; returns the states
    ((steps + 1, N, 13), or (W, steps + 1, N, 13)) and the flags per step ((steps,) or (W, steps)).
    Every chunk runs ``chunk_length`` steps (one compiled program; the last chunk's extra steps are
    dropped) and starts from the last state of the one before as a continued start
    (``start="continued"``: a jointed world's drift is the rollout's own, not a user's mistake).
    ``residuals`` receives the solver's residual per step; ``SolverWarning``s and
    ``NonFiniteWarning``s are left to the caller (who counts them over the whole rollout).
    ``controls``: (steps, …) per step (an actuated world's (steps, A)), the same for every world of
    a batch; a chunk past the end repeats the last row (its steps are dropped)."""
    import warnings

    import jax
    from tqdm.auto import tqdm

    from . import worlds
    from .dynamics import NonFiniteWarning, SolverWarning

    batched = np.ndim(state.pos) == 3
    axis = 1 if batched else 0
    out, flags = [np.expand_dims(np.asarray(state.to_array()), axis)], []
    done, length = 0, chunk_length(steps, chunk)
    with tqdm(total=steps, desc=desc, unit="step", disable=not progress) as bar:
        while done < steps:
            k = min(length, steps - done)  # the steps kept of this chunk's `length`
            start = "initial" if done == 0 else "continued"
            u = None
            if controls is not None:
                u = np.asarray(controls[done:done + length])
                u = np.concatenate([u, np.repeat(u[-1:], length - len(u), axis=0)]) if len(u) < length else u
                if batched:
                    u = np.broadcast_to(u, (np.shape(state.pos)[0],) + u.shape)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SolverWarning)  # counted over the whole rollout by the caller
                warnings.simplefilter("ignore", NonFiniteWarning)  # the caller counts NaN (and the last
                # chunk's dropped steps must not warn)
                if batched:
                    traj, info = worlds.batch_rollout(model, scene, params, state, length, u, start=start)
                else:
                    traj, info = worlds.rollout(model, scene, params, state, length, u, start=start)
            arr = np.asarray(traj.to_array())
            out.append(arr[:, 1:k + 1] if batched else arr[1:k + 1])
            flags.append(np.asarray(info.flags)[..., :k])
            if residuals is not None:
                residuals.append(np.asarray(info.residual)[..., :k])
            state = jax.tree_util.tree_map(lambda x: x[:, k] if batched else x[k], traj)
            done += k
            bar.update(k)
    return np.concatenate(out, axis=axis), np.concatenate(flags, axis=axis)


def solver_warning(flags: np.ndarray, residuals: np.ndarray, cap: int, unit: str = "throws") -> str | None:
    """The CLI's one-line warning when steps of a rollout raised ``Flags.SOLVER`` (None: none did):
    how many of all its steps, the first (0-based, over the whole rollout), the largest residual,
    and the option to change. flags, residuals: per step (steps,) or per throw (``unit``: "worlds"
    for --mjcf's) and step."""
    from .dynamics import solver_message
    from .types import Flags

    bad = (np.asarray(flags) & int(Flags.SOLVER)) != 0
    if not bad.any():
        return None
    steps = bad.shape[-1]
    first = int(np.argmax(bad.any(axis=tuple(range(bad.ndim - 1)))) if bad.ndim > 1 else np.argmax(bad))
    res = np.asarray(residuals, float)
    worst = float(np.max(np.where(bad, np.where(np.isfinite(res), res, np.inf), 0.0)))
    if bad.ndim > 1:
        who = f"{int(bad.any(axis=-1).sum())} of {bad.shape[0]} {unit}, at {int(bad.sum())} steps in all"
    else:
        who = f"{int(bad.sum())} of {steps} steps"
    hint = f"rerun with a larger --max-sweeps (now {cap}); the file's flags say which steps"
    return "jaxcontact simulate: warning: " + solver_message(who, first, worst, hint)


def plot_scene(states: np.ndarray, dt: float, path: str, title: str):
    from .plotting import pyplot

    plt = pyplot("simulate --plot")
    t = np.arange(states.shape[0]) * dt
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for i in range(states.shape[1]):
        ax[0].plot(states[:, i, 0], states[:, i, 2], lw=0.8)
        ax[1].plot(t, states[:, i, 2], lw=0.8)
    ax[0].set_xlabel("x (m)")
    ax[0].set_ylabel("height z (m)")
    ax[0].set_title(f"{title}: centres in the x-z plane")
    ax[0].axis("equal")
    ax[1].set_xlabel("t (s)")
    ax[1].set_ylabel("centre height (m)")
    ax[1].set_title("height of every box")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_scene(args: argparse.Namespace) -> int:
    import jax

    from .cliargs import check_memory, optional_outputs
    from .types import Flags

    name, n = args.scene
    if args.shape not in (None, "box"):
        raise ValueError(f"--shape {args.shape}: a --scene is a world of 0.1 m boxes; drop --shape (or simulate "
                         "throws without --scene)")
    if args.throws is not None:
        raise ValueError("--throws: a --scene is one world, not random throws; drop --throws")
    bodies = n * (n + 1) // 2 if name == "pyramid" else n
    itemsize = 8 if jax.config.jax_enable_x64 else 4
    check_memory(2 * (args.steps + 1) * bodies * 13 * itemsize,
                 f"simulate --scene {name}:{n} --steps {args.steps}", "use fewer --steps")
    residuals = []
    with CompileClock() as clock:
        scene, model, params, states, flags = simulate_scene(name, n, args.steps, args.seed,
                                                             progress=not args.no_progress, mu=args.mu,
                                                             restitution=args.restitution, dt=args.dt,
                                                             max_sweeps=args.max_sweeps, residuals=residuals)
    warning = solver_warning(flags, np.concatenate(residuals), model.law.solver.max_iter)
    out = Path(args.out)
    np.savez_compressed(out, states=states, layout=np.array("steps x bodies x (pos3,quat_wxyz4,vel3_world,omega3_body)"),
                        scene=np.array(f"{name}:{n}"), dt=np.array(model.dt), sample_period=np.array(model.dt),
                        engine_dt=np.array(model.dt), gravity=np.array(model.gravity), flags=flags,
                        mu=np.asarray(params.law.mu), restitution=np.asarray(params.law.restitution),
                        seed=np.array(args.seed))
    bad = {f.name: int(np.sum((flags & int(f)) != 0)) for f in Flags if np.any(flags & int(f))}
    nan = int(np.isnan(states).sum())
    print(f"wrote {out}: {name}:{n}, {bodies} boxes x {states.shape[0]} states ({clock.summary()}, NaN: {nan}"
          + (f"; flagged steps: {bad}" if bad else "; no step flagged") + ")")
    if warning:
        print(warning, file=sys.stderr)

    def plot():
        plot_scene(states, model.dt, args.plot, f"{name}:{n}")
        print(f"wrote {args.plot}")

    failed = optional_outputs(*([("--plot", plot)] if args.plot else []),
                              *([("--animate", lambda: write_animation(args, scene, params, states, model.dt))]
                                if args.animate else []))
    return failed or (0 if nan == 0 else 1)


def write_animation(args, scene, params, states, dt):
    from .worlds.animate import animate

    frames = animate(scene, params, states, dt, args.animate, progress=not args.no_progress)
    print(f"wrote {args.animate} ({frames} frames)")


PERTURB_SPEED = 0.05  # m/s: the standard deviation of the velocities added to worlds 1.. of --worlds


def read_controls(path, scene, steps: int) -> np.ndarray:
    """``--controls FILE.npy`` of an actuated world: a finite float array of shape (steps, A), one
    control per actuator per step (MuJoCo's ``ctrl``); refused by name otherwise."""
    from .worlds.pipeline import actuated

    A = actuated(scene)
    if not A:
        raise ValueError(f"--controls {path}: this world has no actuators (the file's <actuator>s drive its joints)")
    try:
        u = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise ValueError(f"--controls {path}: not a .npy array ({type(e).__name__}: {str(e).splitlines()[0]})") from None
    if not np.issubdtype(u.dtype, np.floating) and not np.issubdtype(u.dtype, np.integer):
        raise ValueError(f"--controls {path}: expected numbers, got dtype {u.dtype}")
    if u.shape != (steps, A):
        raise ValueError(f"--controls {path}: expected shape ({steps}, {A}) (--steps by the world's {A} actuators), "
                         f"got {u.shape}")
    if not np.all(np.isfinite(u)):
        raise ValueError(f"--controls {path}: contains NaN or infinite values")
    return u.astype(float)


def run_mjcf(args: argparse.Namespace) -> int:
    """``simulate --mjcf FILE``: the world of a MuJoCo file (``worlds.from_mjcf``), ``--worlds`` of
    it batched (world 0 as the file says, the others with every free body's velocity changed by
    N(0, (0.05 m/s)²) per component from ``--seed``)."""
    import dataclasses

    import jax
    import jax.numpy as jnp

    from . import worlds
    from .cliargs import check_memory, optional_outputs
    from .files import file_sha256
    from .types import Flags
    from .worlds.mjcf import from_mjcf, require_mujoco
    from .worlds.scenes import heap_broad_phase

    require_mujoco("simulate --mjcf")
    for option, value in (("--shape", args.shape), ("--throws", args.throws), ("--mu", args.mu),
                          ("--restitution", args.restitution)):
        if value is not None:
            raise ValueError(f"{option}: a --mjcf world takes its bodies and friction from the file; drop {option}")
    keyframe = args.keyframe
    if keyframe is not None and keyframe.isdigit():
        keyframe = int(keyframe)
    scene, params, state, model = from_mjcf(args.mjcf, keyframe=keyframe, approximate=args.approximate)
    N = scene.num_bodies
    controls = None if args.controls is None else read_controls(args.controls, scene, args.steps)
    scene = heap_broad_phase(scene)  # more than 3N pairs: the heap's broad phase (scenes.heap)
    world_law = model.law
    if args.max_sweeps is not None:
        world_law = dataclasses.replace(world_law, solver=dataclasses.replace(world_law.solver, max_iter=args.max_sweeps))
    model = dataclasses.replace(model, law=world_law, **({"dt": args.dt} if args.dt is not None else {}))
    W = args.worlds
    itemsize = 8 if jax.config.jax_enable_x64 else 4
    check_memory(2 * W * (args.steps + 1) * N * 13 * itemsize,
                 f"simulate --mjcf --worlds {W} --steps {args.steps}", "use fewer --steps or --worlds")
    states0 = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (W,) + x.shape), state)
    if W > 1:
        free = ~scene.jointed_bodies & ~scene.fixed_bodies  # fixed bodies stay at rest
        kick = PERTURB_SPEED * jax.random.normal(jax.random.PRNGKey(args.seed), (W, N, 3), state.vel.dtype)
        kick = kick.at[0].set(0.0) * jnp.asarray(free, state.vel.dtype)[None, :, None]
        states0 = states0.replace(vel=states0.vel + kick)
    residuals = []
    name = Path(args.mjcf).name
    with CompileClock() as clock:
        states, flags = run_world(model, scene, params, states0 if W > 1 else state, args.steps,
                                  progress=not args.no_progress, desc=f"simulate {name}", residuals=residuals,
                                  controls=controls)
    if W == 1:
        states, flags = states[None], flags[None]
        residuals = [r[None] for r in residuals]
    warning = solver_warning(flags, np.concatenate(residuals, axis=1), model.law.solver.max_iter, "worlds")
    out = Path(args.out)
    np.savez_compressed(out, states=states,
                        layout=np.array("worlds x steps x bodies x (pos3,quat_wxyz4,vel3_world,omega3_body); body i "
                                        "is MuJoCo body i + 1, pos its centre of mass"),
                        mjcf=np.array(str(args.mjcf)), mjcf_sha256=np.array(file_sha256(args.mjcf)),
                        dt=np.array(model.dt), sample_period=np.array(model.dt), engine_dt=np.array(model.dt),
                        gravity=np.array(model.gravity), flags=flags, mu=np.asarray(params.law.mu),
                        mass=np.asarray(params.body.mass), seed=np.array(args.seed))
    bad = {f.name: int(np.sum((flags & int(f)) != 0)) for f in Flags if np.any(flags & int(f))}
    nan = int(np.isnan(states).sum())
    print(f"wrote {out}: {name}, {W} world{'s' if W > 1 else ''} of {N} bodies x {states.shape[1]} states "
          f"({clock.summary()}, NaN: {nan}" + (f"; flagged steps: {bad}" if bad else "; no step flagged") + ")")
    if warning:
        print(warning, file=sys.stderr)

    def plot():
        plot_scene(states[0], model.dt, args.plot, name)
        print(f"wrote {args.plot}")

    failed = optional_outputs(*([("--plot", plot)] if args.plot else []),
                              *([("--animate", lambda: write_animation(args, scene, params, states[0], model.dt))]
                                if args.animate else []))
    return failed or (0 if nan == 0 else 1)


def plot_trajectories(states: np.ndarray, dt: float, path: str, planar: bool, n: int = 5):
    from .plotting import pyplot

    plt = pyplot("simulate --plot")

    t = np.arange(states.shape[1]) * dt
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for i in range(min(n, len(states))):
        s = states[i]
        if planar:
            ax[0].plot(s[:, 0], s[:, 1], label=f"throw {i}")
            ax[1].plot(t, s[:, 1])
        else:
            ax[0].plot(s[:, 0], s[:, 1], label=f"throw {i}")
            ax[1].plot(t, s[:, 2])
    ax[0].set_xlabel("x (m)")
    ax[0].set_ylabel("y (m)" if not planar else "height y (m)")
    ax[0].set_title("path" if not planar else "trajectory in the plane")
    ax[0].axis("equal")
    ax[0].legend(fontsize=7)
    ax[1].set_xlabel("t (s)")
    ax[1].set_ylabel("centre height (m)")
    ax[1].set_title("height of the centre of mass")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def state_size(shape: str) -> int:
    """Numbers per saved state: 6 planar (x, y, theta, vx, vy, omega), else 13."""
    return 6 if shape == "box2d" else 13


def check_memory_for(throws: int, steps: int, shape: str, itemsize: int) -> None:
    """``MemoryError`` before simulating if the trajectories (collected in chunks, then joined: two
    copies of throws x (steps + 1) states) do not fit in the memory available."""
    from .cliargs import check_memory, trajectory_bytes

    check_memory(trajectory_bytes(throws, steps, state_size(shape), itemsize),
                 f"simulate --throws {throws} --steps {steps} (2 copies of {throws} x {steps + 1} states of "
                 f"{state_size(shape)} x {itemsize} bytes)", "use fewer --throws or --steps")


def run(args: argparse.Namespace) -> int:
    import jax

    if args.scene is not None and args.mjcf is not None:
        raise ValueError("--scene and --mjcf: give one world")
    if args.worlds is not None and args.mjcf is None:
        raise ValueError("--worlds: batches of worlds are for --mjcf (--scene is one world, throws use --throws)")
    if args.mjcf is not None:
        args.worlds = 1 if args.worlds is None else args.worlds
        return run_mjcf(args)
    for option, given in (("--keyframe", args.keyframe is not None), ("--approximate", args.approximate),
                          ("--controls", getattr(args, "controls", None) is not None)):
        if given:
            raise ValueError(f"{option}: only with --mjcf")
    if args.scene is not None:
        return run_scene(args)
    if args.animate:
        raise ValueError("--animate: watches a world (--scene or --mjcf), not random throws")
    from .cliargs import optional_outputs

    for k, v in THROW_DEFAULTS.items():  # the options left out: the throws' defaults
        if getattr(args, k) is None:
            setattr(args, k, v)

    # everything cheap first: the output paths were checked while parsing, the memory now
    check_memory_for(args.throws, args.steps, args.shape, 8 if jax.config.jax_enable_x64 else 4)
    solver = []
    with CompileClock() as clock:
        model, params, states = simulate_throws(
            args.shape, args.throws, args.steps, args.seed, mu=args.mu, restitution=args.restitution,
            dt=args.dt, progress=not args.no_progress, max_sweeps=args.max_sweeps, solver=solver,
        )
    warning = solver_warning(np.concatenate([f for f, _ in solver], axis=1),
                             np.concatenate([r for _, r in solver], axis=1), model.law.solver.max_iter)
    planar = args.shape == "box2d"
    out = Path(args.out)  # ends in .npz (cliargs.output_npz), so numpy writes exactly this file
    np.savez_compressed(
        out,
        states=states,
        layout=np.array("x,y,theta,vx,vy,omega" if planar else "pos3,quat_wxyz4,vel3_world,omega3_body"),
        shape=np.array(args.shape),
        dt=np.array(model.dt),  # the sample period: every engine step is written
        sample_period=np.array(model.dt),
        engine_dt=np.array(model.dt),
        gravity=np.array(model.gravity),
        mu=np.array(args.mu),
        restitution=np.array(args.restitution),
        mass=np.asarray(params.body.mass),
        inertia=np.asarray(params.body.inertia),
        vertices=np.asarray(params.body.vertices),
        seed=np.array(args.seed),
    )
    nan = int(np.isnan(states).sum())
    print(f"wrote {out}: {states.shape[0]} throws x {states.shape[1]} states ({clock.summary()}, NaN: {nan})")
    if warning:
        print(warning, file=sys.stderr)

    def plot():
        plot_trajectories(states, model.dt, args.plot, planar)
        print(f"wrote {args.plot}")

    failed = optional_outputs(*([("--plot", plot)] if args.plot else []))
    return failed or (0 if nan == 0 else 1)


def register(sub) -> None:
    from .cliargs import nonnegative_float, output_figure, output_npz, positive_float, positive_int, seed, unit_interval

    p = sub.add_parser("simulate", help="simulate random throws and save them to .npz",
                       description="Random throws under the Coulomb LCP law, saved to .npz (SI units: m, s, kg).")
    p.add_argument("--shape", choices=SHAPES, default=None,
                   help="body: box (0.1 m, 0.37 kg), pentagon (prism 0.06 m radius x 0.1 m), box2d (planar "
                        "0.1 m), link (0.2 x 0.05 x 0.05 m, 0.185 kg) (default: box; a --scene is of boxes: "
                        "another shape is refused)")
    p.add_argument("--throws", type=positive_int, default=None,
                   help="number of random throws (throws; default: 100; refused with --scene)")
    p.add_argument("--steps", type=positive_int, default=800, help="time steps per throw (steps of --dt)")
    p.add_argument("--seed", type=seed, default=0, help="random seed of the initial states (integer)")
    p.add_argument("--mu", type=nonnegative_float, default=None,
                   help=f"Coulomb friction coefficient (dimensionless; default: {THROW_DEFAULTS['mu']} for throws, "
                        "the scene's own with --scene: 0.5, the cradle's ground 0)")
    p.add_argument("--restitution", type=unit_interval, default=None,
                   help="Newton restitution coefficient, in [0, 1] (dimensionless; default: "
                        f"{THROW_DEFAULTS['restitution']} for throws, the scene's own with --scene: 0, the cradle's 1)")
    p.add_argument("--dt", type=positive_float, default=None,
                   help=f"time step (s; default: {THROW_DEFAULTS['dt']}, throws and scenes)")
    p.add_argument("--out", type=output_npz, required=True,
                   help="output .npz file ('.npz' is appended if missing; required)")
    p.add_argument("--plot", type=output_figure, default=None,
                   help='PNG with a few trajectories (".png" appended unless a figure suffix is given; positions in m, time in s; needs pip install "jaxcontact[plot]"; '
                        "default: no figure)")
    p.add_argument("--scene", type=parse_scene, default=None,
                   help="simulate a world of 0.1 m, 0.37 kg boxes instead of throws (docs/worlds.md): stack:N, "
                        "pyramid:LEVELS, heap:N (N boxes dropped from a grid; slow: every pair), cradle:N "
                        "(Newton's cradle, eps = 1); --steps, --seed, --out and --plot apply (default: throws)")
    p.add_argument("--max-sweeps", type=positive_int, default=None,
                   help="the contact solver's cap on Gauss-Seidel sweeps per step (sweeps; default: 100 for "
                        "throws, 1000 for --scene); a step that reaches it with a residual above 5e-3 m/s is "
                        "flagged and warned about")
    p.add_argument("--mjcf", type=input_file, default=None,
                   help="simulate the world of a MuJoCo MJCF or URDF file (docs/worlds.md: boxes, mesh hulls, free "
                        "joints, hinges, a ground plane; anything else is refused by name); its timestep, gravity "
                        "and friction; --steps, --dt, --out, --plot, --animate apply; needs pip install "
                        '"jaxcontact[mjcf]" (default: throws)')
    p.add_argument("--controls", type=input_file, default=None,
                   help="with --mjcf: a .npy of shape (--steps, actuators), the file's actuators' controls per step "
                        "(default: the keyframe's, else 0, held)")
    p.add_argument("--keyframe", default=None,
                   help="with --mjcf: the keyframe (name or index) that starts the world (default: MuJoCo's reset "
                        "state, qpos0 at rest; a file from to_mjcf keeps its velocities in the keyframe 'initial')")
    p.add_argument("--approximate", action="store_true",
                   help="with --mjcf: replace spheres, capsules, cylinders, ellipsoids, bodies of several geoms and "
                        "hulls over 128 vertices by stated convex hulls instead of refusing them (docs/worlds.md)")
    p.add_argument("--worlds", type=positive_int, default=None,
                   help="with --mjcf: worlds simulated at once (worlds; default: 1); world 0 starts as the file "
                        f"says, the others with N(0, {PERTURB_SPEED} m/s) added to each free body's velocity (--seed)")
    p.add_argument("--animate", type=output_animation, default=None,
                   help="with --scene or --mjcf: write an animation of the world (.gif; .mp4 where ffmpeg is "
                        'installed), real time at 25 frames/s; needs pip install "jaxcontact[plot]" (default: none)')
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=run)


def input_file(text: str) -> str:
    """argparse type: an existing, readable file (one-line error otherwise)."""
    import os

    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"{text}: no such file" if not os.path.exists(text) else f"{text}: not a file")
    if not os.access(text, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text}: not readable")
    return text


def output_animation(text: str) -> str:
    """argparse type: a writable .gif (or .mp4 with ffmpeg) path, checked before any work."""
    from .cliargs import check_output_file

    suffix = Path(text).suffix.lower()
    if suffix not in (".gif", ".mp4"):
        raise argparse.ArgumentTypeError(f"write a .gif (or an .mp4 where ffmpeg is installed), got {text!r}")
    try:
        if suffix == ".mp4":
            from .worlds.animate import check_animation_path

            check_animation_path(text)
        return str(check_output_file(text))
    except (ValueError, ImportError) as err:
        raise argparse.ArgumentTypeError(str(err)) from None
