"""dacm: the contact law's branches, lax-selection batching, data, checkpoints, CLI (tiny sizes)."""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcontact as jc
from jaxcontact import geometry
from jaxcontact.dacm import data as D
from jaxcontact.dacm import features as F
from jaxcontact.dacm import train as T
from jaxcontact.dacm.law import PATCH_KEYS, DACMLaw, PDDLaw, out_of_range
from jaxcontact.rotations import quat_mul
from jaxcontact.simulate import make_body

SMALL = dict(clf_hidden=(8, 8), reg_hidden=(8, 8))


def forced(law, params, modes: dict):
    """Law params whose classifier of patch type k always predicts modes[k] (0/1/2)."""
    params = jax.tree_util.tree_map(lambda a: a, params)
    for k, c in modes.items():
        p = params["clf"][PATCH_KEYS[k]]["params"]
        last = sorted(p, key=lambda s: int(s.split("_")[1]))[-1]
        p[last] = {"kernel": jnp.zeros_like(p[last]["kernel"]), "bias": jnp.zeros(3).at[c].set(100.0)}
    return params


def small_friction(params, value=0.002):
    """Regressors output a small constant friction wrench (an untrained one can be huge)."""
    params = jax.tree_util.tree_map(lambda a: a, params)
    for name, v in params["reg"].items():
        p = v["params"]
        last = sorted(p, key=lambda s: int(s.split("_")[1]))[-1]
        p[last] = {"kernel": jnp.zeros_like(p[last]["kernel"]), "bias": jnp.full_like(p[last]["bias"], value)}
    return params


N = 30  # rollout length shared by the tests (one compilation per law and batch size)
B = 3


def tile(s, n=B):
    return jax.tree_util.tree_map(lambda a: jnp.stack([a] * n), s)


def setup(shape, modes, law_cls=DACMLaw):
    body, C = make_body(shape)
    law = law_cls(body.dim, **SMALL) if law_cls is DACMLaw else law_cls(body.dim, (8, 8))
    lp = law.init_params(jax.random.PRNGKey(3))
    if modes is not None:
        lp = forced(law, lp, modes)
    model = jc.Model(law=law, dt=0.002, max_contacts=C)
    return model, jc.Params(body=body, ground=jc.Ground.flat(body.dim), law=lp)


def resting(shape):
    if shape == "box2d":
        return jc.make_planar_state(pos=(0.0, 0.05))
    return jc.make_state(pos=(0.0, 0.0, 0.05))


@pytest.mark.parametrize("shape", ["box", "box2d"])
def test_static_branch_keeps_resting_box_at_rest(shape):
    dim = 2 if shape == "box2d" else 3
    model, params = setup(shape, {k: F.STATIC for k in F.patch_types(dim)})
    s0 = resting(shape)
    traj, info = jc.batch_rollout(model, params, tile(s0), N, output="trajectory", with_info=True)
    assert np.all(np.asarray(info.mode) == F.STATIC)
    assert np.max(np.abs(np.asarray(traj.pos) - np.asarray(s0.pos))) < 1e-12
    assert np.max(np.abs(np.asarray(traj.vel))) < 1e-12
    assert np.max(np.abs(np.asarray(traj.omega))) < 1e-12


def law_jit(model, params, s):
    return _LAW_JIT(model)(params, s)


_CACHE = {}


def _LAW_JIT(model):
    if model not in _CACHE:
        _CACHE[model] = jax.jit(lambda p, s: model.law(model, p, s, jc.free_velocity(model, p, s)))
    return _CACHE[model]


def test_static_branch_point_patch_pins_the_contact_point():
    model, params = setup("box", {1: F.STATIC, 2: F.STATIC, 3: F.STATIC})
    q = jnp.array([np.cos(0.3), np.sin(0.3), np.sin(0.3) * 0.5, 0.0])
    q = q / jnp.linalg.norm(q)
    s = jc.make_state(pos=(0, 0, 0.2), quat=q, vel=(0.5, -0.3, -1.0), omega=(2.0, 1.0, -1.0))
    low = np.argmin(np.asarray(geometry.world_points(s, params.body.vertices))[:, 2])
    s = s.replace(pos=s.pos - jnp.array([0, 0, float(geometry.world_points(s, params.body.vertices)[low, 2])]))
    v1 = jc.free_velocity(model, params, s)
    p, info = law_jit(model, params, s)
    assert int(info.patch_type) == 1 and int(info.mode) == F.STATIC
    v = v1 + geometry.mass_matrix_inverse(params.body, s) @ p
    J = geometry.point_jacobian(s, params.body.vertices[low], jnp.eye(3))
    np.testing.assert_allclose(np.asarray(J @ v), 0.0, atol=1e-12)


def test_detach_branch_gives_zero_impulse():
    model, params = setup("box", {1: F.DETACH, 2: F.DETACH, 3: F.DETACH})
    s = jc.make_state(pos=(0, 0, 0.0505), vel=(0.3, 0.0, 0.2))
    p, info = law_jit(model, params, s)
    assert int(info.mode) == F.DETACH and int(info.patch_type) == 3
    assert np.all(np.asarray(p) == 0.0)


def test_dynamic_branch_normal_impulse_nonnegative_and_nonpenetrating():
    model, params = setup("box", {1: F.DYNAMIC, 2: F.DYNAMIC, 3: F.DYNAMIC})
    params = params.replace(law=small_friction(params.law))
    from jaxcontact.states import random_throws

    states = random_throws(jax.random.PRNGKey(0), B)
    # drop each throw so its lowest vertex is 1 mm above the ground, falling fast
    pts = jax.vmap(lambda s: geometry.world_points(s, params.body.vertices))(states)
    states = states.replace(pos=states.pos.at[:, 2].add(-pts[..., 2].min(1) + 1e-3),
                            vel=states.vel.at[:, 2].set(-3.0))
    traj, info = jc.batch_rollout(model, params, states, N, output="trajectory", with_info=True)
    assert np.all(np.asarray(info.impulse[..., 0]) >= 0.0)
    modes = np.asarray(info.mode)
    assert np.all((modes == F.DYNAMIC) | (modes == -1)) and np.any(modes == F.DYNAMIC)
    pts = jax.vmap(jax.vmap(lambda s: geometry.world_points(s, params.body.vertices)))(traj)
    # non-penetration of the velocity-level LCP holds to first order in h: the residual
    # penetration is the rotation's second-order term (the Coulomb LCP law has the same)
    assert float(pts[..., 2].min()) > -1e-4


def test_dissipative_setting_never_lets_learned_friction_add_energy():
    import dataclasses

    model, params = setup("box", {1: F.DYNAMIC, 2: F.DYNAMIC, 3: F.DYNAMIC})
    params = params.replace(law=small_friction(params.law, value=0.5))  # absurdly large friction
    model = dataclasses.replace(model, law=dataclasses.replace(model.law, dissipative=True))
    s = jc.make_state(pos=(0, 0, 0.05), vel=(0.4, -0.2, 0.0), omega=(0.0, 0.0, 1.0))
    v1 = jc.free_velocity(model, params, s)
    p, info = law_jit(model, params, s)
    assert int(info.mode) == F.DYNAMIC
    M = geometry.mass_matrix(params.body, s)
    v = v1 + jnp.linalg.solve(M, p)
    assert float(v @ M @ v) <= float(v1 @ M @ v1) + 1e-12


def test_lax_selection_batch_of_mixed_modes_equals_per_body():
    # point → static, line → dynamic, face → detach; one state of each patch type
    model, params = setup("box", {1: F.STATIC, 2: F.DYNAMIC, 3: F.DETACH})
    params = params.replace(law=small_friction(params.law))
    body = params.body
    th = 0.4
    q_line = jnp.array([np.cos(th / 2), np.sin(th / 2), 0, 0])
    q_pt = jnp.array([0.88, 0.3, 0.35, 0.1])
    q_pt = q_pt / jnp.linalg.norm(q_pt)
    sts = []
    for q, v in ((q_pt, (0.4, 0.1, -0.5)), (q_line, (0.5, 0.0, -0.3)), (jnp.array([1.0, 0, 0, 0]), (0.2, 0.1, 0.0))):
        s = jc.make_state(quat=q, vel=v, omega=(0.5, -1.0, 0.3))
        zmin = float(geometry.world_points(s, body.vertices)[:, 2].min())
        sts.append(s.replace(pos=jnp.array([0.0, 0.0, -zmin])))
    batch = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *sts)
    f = lambda s: law_jit(model, params, s)
    pb, ib = jax.jit(jax.vmap(lambda s: model.law(model, params, s, jc.free_velocity(model, params, s))))(batch)
    assert list(np.asarray(ib.patch_type)) == [1, 2, 3]
    assert list(np.asarray(ib.mode)) == [F.STATIC, F.DYNAMIC, F.DETACH]
    for i, s in enumerate(sts):
        p, info = f(s)
        np.testing.assert_allclose(np.asarray(pb[i]), np.asarray(p), rtol=1e-10, atol=1e-13)
        assert int(info.mode) == int(ib.mode[i])
    # the same through a jitted batched rollout
    tb, info = jc.batch_rollout(model, params, batch, N, output="trajectory", with_info=True)
    for i, s in enumerate(sts):
        ts = tile(s)
        ti, _ = jc.batch_rollout(model, params, ts, N, output="trajectory", with_info=True)
        np.testing.assert_allclose(np.asarray(tb.pos[i]), np.asarray(ti.pos[0]), atol=1e-12)


def _rotate_about_z(s, ang):
    """The state of the world rotated by ``ang`` about the ground normal (z) through the origin."""
    c, si = np.cos(ang), np.sin(ang)
    R = jnp.array([[c, -si, 0.0], [si, c, 0.0], [0.0, 0.0, 1.0]])
    q = jnp.array([np.cos(ang / 2), 0.0, 0.0, np.sin(ang / 2)])
    return s.replace(pos=R @ s.pos, quat=quat_mul(q, s.quat), vel=R @ s.vel), R


def test_symmetry_averaged_law_is_equivariant_like_the_ground_truth():
    """The anisotropic Coulomb ground truth is equivariant under a half turn about the ground
    normal (the premise of DACMLaw(symmetry=2)); the symmetry-averaged dacm law is too, exactly,
    while the plain law with random networks is not (so the check can fail)."""
    body, C = make_body("box")
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    s = jc.make_state(quat=np.r_[np.cos(0.3), np.sin(0.3) * axis], vel=(0.7, -0.4, -0.9), omega=(1.0, -2.0, 0.5))
    s = s.replace(pos=jnp.array([0.3, -0.2, -float(geometry.world_points(s, body.vertices)[:, 2].min()) + 1e-4]))
    rs, R = _rotate_about_z(s, np.pi)
    gm, gp = D.ground_truth_setup("box", anisotropic=True)
    law_gt = jax.jit(lambda st: gm.law(gm, gp, st, jc.free_velocity(gm, gp, st))[0])
    p, pr = law_gt(s), law_gt(rs)
    assert float(jnp.linalg.norm(p[:3])) > 0.05  # an impact with friction
    np.testing.assert_allclose(pr[:3], R @ p[:3], atol=1e-9)  # linear part rotates, angular (body frame) not
    np.testing.assert_allclose(pr[3:], p[3:], atol=1e-9)
    with pytest.raises(ValueError, match="symmetry"):
        DACMLaw(3, symmetry=3)
    with pytest.raises(ValueError, match="dim=3"):
        DACMLaw(2, symmetry=2)
    errs = {}
    for sym in (1, 2):
        law = DACMLaw(3, inputs="coulomb", friction_target="ratio", symmetry=sym, **SMALL)
        model = jc.Model(law=law, dt=0.002, max_contacts=C)
        params = jc.Params(body=body, ground=jc.Ground.flat(3), law=law.init_params(jax.random.PRNGKey(5)))
        pred = jax.jit(lambda st: law.predict_symmetric(model, params, st, jc.free_velocity(model, params, st)))
        (patch, _, lg, wf), (patch_r, _, lg_r, wf_r) = pred(s), pred(rs)
        assert int(patch.kind) == int(patch_r.kind) == 1
        errs[sym] = max(float(jnp.max(jnp.abs(lg_r - lg))), float(jnp.max(jnp.abs(wf_r[:2] + wf[:2]))),
                        float(jnp.abs(wf_r[2] - wf[2])))
        assert float(jnp.max(jnp.abs(wf[:2]))) > 1e-6
    assert errs[2] < 1e-9 and errs[1] > 1e-4, errs


@pytest.mark.parametrize("dim", [2, 3])
def test_patch_frame_round_trip(dim):
    key = jax.random.PRNGKey(dim)
    from jaxcontact.states import random_throws

    s = jax.tree_util.tree_map(lambda a: a[0], random_throws(key, 1, planar=dim == 2))
    g = jc.Ground.flat(dim)
    c = jnp.asarray(np.random.default_rng(0).normal(size=dim))
    p = jnp.asarray(np.random.default_rng(1).normal(size=3 if dim == 2 else 6))
    w = F.to_patch_frame(g, s, c, p)
    np.testing.assert_allclose(np.asarray(F.from_patch_frame(g, s, c, w)), np.asarray(p), atol=1e-12)


def test_pdd_law_runs_and_is_zero_without_patch():
    model, params = setup("box", None, PDDLaw)
    s = jc.make_state(pos=(0, 0, 0.5))
    p, info = law_jit(model, params, s)
    assert int(info.patch_type) == 0 and np.all(np.asarray(p) == 0)


def test_bad_data_and_checkpoints_raise_clear_errors(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="dacm data file .*bad.npz: not a readable .npz archive"):
        D.load(bad)
    np.savez(tmp_path / "x.npz", x=np.zeros((3, 23)))
    with pytest.raises(ValueError, match="missing arrays"):
        D.load(tmp_path / "x.npz")
    with pytest.raises(FileNotFoundError):
        D.load(tmp_path / "nope.npz")
    with pytest.raises(FileNotFoundError):
        T.load_checkpoint(tmp_path / "nockpt")
    (tmp_path / "ck").mkdir()
    with pytest.raises(ValueError, match="missing meta.json"):
        T.load_checkpoint(tmp_path / "ck")
    with pytest.raises(ValueError, match="shape must be one of"):
        D.ground_truth_setup("sphere")
    with pytest.raises(ValueError, match="3D shape"):
        D.ground_truth_setup("box2d", anisotropic=True)


def test_rest_subsampling_keeps_motion_and_caps_resting_steps():
    n = 80
    x = np.zeros((n, 23))
    x[:, 19:22] = 0.001  # patch velocity ~ 0: resting
    x[60:, 19] = 0.5  # sliding
    data = {"dim": np.array(3), "x": x, "kind": np.full(n, 3), "label": np.zeros(n, int),
            "throw": np.r_[np.zeros(50, int), np.ones(30, int)]}
    keep = T.subsample_rest(data, 10)
    assert keep[60:].all()  # sliding instances all kept
    assert 8 <= keep[:50].sum() <= 10 and keep[50:60].sum() == 10


def test_bad_law_settings_raise():
    with pytest.raises(ValueError, match="friction_target"):
        DACMLaw(3, friction_target="relative")
    with pytest.raises(ValueError, match="dim"):
        DACMLaw(4)


def test_out_of_range_inputs_are_flagged():
    law = DACMLaw(3, **SMALL)
    lp = law.init_params()
    for name in lp["norm"]:
        lp["norm"][name]["x_min"] = jnp.zeros(23)
        lp["norm"][name]["x_max"] = jnp.ones(23)
    x = np.full((3, 23), 0.5)
    x[1, 4] = 2.0
    assert list(out_of_range(lp, x, np.array([1, 2, 3]))) == [False, True, False]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    from jaxcontact.cli import main

    d = tmp_path_factory.mktemp("dacm")
    data, ck = str(d / "box.npz"), str(d / "ck")
    assert main(["dacm", "generate", "--shape", "box", "--throws", "4", "--steps", "250", "--seed", "0", "--out", data]) == 0
    assert main(["dacm", "train", "--data", data, "--out", ck, "--preset", "paper", "--no-progress",
                 "--clf-epochs", "2", "--reg-epochs", "2",
                 "--hidden-scale", "0.05", "--friction-target", "ratio", "--max-rest-per-throw", "10",
                 "--inputs", "physics", "--max-steady-per-throw", "10"]) == 0
    return d, data, ck


def _train_args(*extra):
    from jaxcontact.cli import build_parser

    return build_parser().parse_args(["dacm", "train", "--data", "d.npz", "--out", "ck", *extra])


def test_presets_paper_and_default_recipes_without_training(capsys):
    """--preset paper is the paper's setup (Fig. 3 hyper-parameters, its inputs and targets, no
    subsampling / early stopping / budget); the default (= --preset best) is the best measured
    recipe; explicit flags override a preset (0 = off); --help lists what each preset sets."""
    from jaxcontact.cli import build_parser
    from jaxcontact.dacm import recipes as R
    from jaxcontact.dacm.cli import train_recipe
    from jaxcontact.dacm.networks import HyperParams

    paper = train_recipe(_train_args("--preset", "paper"))
    assert paper == R.PAPER
    assert (paper["friction_target"], paper["inputs"], paper["friction_head"], paper["regressor_weight"]) == \
        ("absolute", "paper", "plain", "uniform")
    assert paper["max_rest_per_throw"] is paper["max_steady_per_throw"] is paper["patience"] is None
    assert R.budget_seconds(paper, 10 ** 6) is None and paper["time_limit"] is None
    for shape in ("box", "pentagon", "box2d"):
        assert R.hyperparams(paper, shape) == HyperParams.paper(shape)
    hp = R.hyperparams(paper, "box")
    assert (hp.classifier.hidden, hp.classifier.epochs, hp.classifier.dropout) == ((256, 180, 80), 100, 0.10)
    assert (hp.regressor.hidden, hp.regressor.epochs, hp.regressor.dropout) == ((512, 360, 180), 1000, 0.05)
    best = train_recipe(_train_args())
    assert best == train_recipe(_train_args("--preset", "best")) == R.BEST
    assert (best["friction_target"], best["inputs"], best["max_rest_per_throw"], best["max_steady_per_throw"],
            best["patience"], best["friction_head"]) == ("ratio", "coulomb", 20, 20, 20, "residual")
    assert R.hyperparams(best, "box").classifier.hidden == (256, 180, 80)
    b = R.budget_seconds(best, 10_000)
    assert b is not None and R.budget_seconds(best, 20_000) > b  # grows with the data
    over = train_recipe(_train_args("--preset", "paper", "--patience", "5", "--inputs", "coulomb"))
    assert over["patience"] == 5 and over["inputs"] == "coulomb" and over["friction_target"] == "absolute"
    off = train_recipe(_train_args("--patience", "0", "--time-budget", "0", "--max-rest-per-throw", "0"))
    assert off["patience"] is None and off["max_rest_per_throw"] is None and R.budget_seconds(off, 10_000) is None
    assert R.budget_seconds(train_recipe(_train_args("--time-budget", "42")), 10 ** 6) == 42.0
    # the checkpoint's symmetry averaging: paper 1; best the largest exact symmetry of the data
    assert R.symmetry_for(paper, 3, False) == 1
    assert [R.symmetry_for(best, 3, False), R.symmetry_for(best, 3, True), R.symmetry_for(best, 2, False)] == [4, 2, 1]
    with pytest.raises(ValueError, match="isotropic"):
        R.symmetry_for(train_recipe(_train_args("--symmetry", "4")), 3, True)
    meta = {"hyperparams": HyperParams.paper("box").to_dict(), "dim": 3, "friction_target": "ratio",
            "inputs": "coulomb", "friction_head": "residual", "symmetry": 4}
    assert T.laws_from_meta(meta)[0].symmetry == 4 and T.laws_from_meta({**meta, "symmetry": 1})[0].symmetry == 1
    with pytest.raises(SystemExit):
        build_parser().parse_args(["dacm", "train", "--help"])
    h = capsys.readouterr().out
    assert "best: --friction-target ratio --inputs coulomb" in h and "paper: --friction-target absolute --inputs paper" in h


def test_time_budget_shares_never_exceed_the_budget():
    """The per-network limit of a total budget is at most the budget plus one first-epoch
    overhead, bigger networks get more, a cheap one at least an equal share; no budget means no
    limit."""
    from jaxcontact.dacm.networks import NetConfig

    c, r = NetConfig((8,), 10, 0.0), NetConfig((16,), 100, 0.0)
    jobs = {("a", "classifier"): (100, c, 4, 3), ("a", "regressor"): (1000, r, 4, 2)}
    s = T._Schedule(jobs, 50.0, None, lambda *a: None, False)
    la, lb = s.limit(("a", "classifier")), s.limit(("a", "regressor"))
    assert 5.0 + 40.0 / 2 - 0.5 <= la < lb <= 50.0 + 5.0  # (less the few ms elapsed)
    assert T._Schedule(jobs, None, None, lambda *a: None, False).limit(("a", "regressor")) is None
    assert T._Schedule(jobs, None, 7.0, lambda *a: None, False).limit(("a", "regressor")) == 7.0


@pytest.mark.slow
def test_cli_end_to_end_tiny(tiny_run, capsys):
    from jaxcontact.cli import main

    d, data, ck = tiny_run
    loaded = D.load(data)
    s = D.summary(loaded)
    assert s["instances"] > 0 and set(np.unique(loaded["kind"])) == {1, 2, 3}
    capsys.readouterr()
    # 4 fresh throws of 250 steps: the ground-truth rollout and instance extraction have the shapes
    # of the fixture's `dacm generate`, so they reuse its compiled programs (compile-bound test)
    assert main(["dacm", "evaluate", "--checkpoint", ck, "--throws", "4", "--steps", "250", "--seed", "5", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    tm = res["trajectory"]
    for k in ("final_position", "final_orientation", "first_impulse"):
        assert tm["gt_mean"][k] >= 0 and np.isfinite(tm["dacm"][k])
    assert set(res["one_step"]) == {"point", "line", "face"}
    assert "out_of_range" in res and "contact_events" in res
    meta = json.loads((d / "ck" / "meta.json").read_text())
    assert meta["friction_target"] == "ratio" and meta["instances_used"] <= len(loaded["x"])
    assert meta["inputs"] == "physics" and "physics" in res["dacm_law"]
    assert all(r["regressor"].get("stopped_by") in ("epochs", "early_stopping") for r in meta["report"].values())
    # provenance: no absolute path, the data's seed, fresh test throws, units
    assert not Path(meta["data_file"]).is_absolute() and (d / "ck" / meta["data_file"]).resolve() == Path(data).resolve()
    assert meta["data_seed"] == 0 and res["test_throws"]["fresh"] is True and res["test_throws"]["training_data_seed"] == 0
    assert res["units"]["final_position"].startswith("m ") and res["units"]["first_impulse"].startswith("N s")
    # bad checkpoint: corrupt weights (a copy: the fixture's checkpoint is used by other tests)
    import shutil

    bad = shutil.copytree(d / "ck", d / "ck_corrupt")
    (bad / "pdd.msgpack").write_bytes(b"garbage")
    assert main(["dacm", "evaluate", "--checkpoint", str(bad), "--throws", "1"]) == 2


@pytest.mark.slow
def test_doc_example_loads_a_checkpoint_and_rolls_it_out(tiny_run):
    """docs/dacm.md's example (load a trained checkpoint in Python, roll the learned law out) runs
    on the fixture's checkpoint: the box lands and stays above the ground within the patch tolerance."""
    import re

    _, _, ck = tiny_run
    text = (Path(__file__).resolve().parents[1] / "docs" / "dacm.md").read_text()
    code = re.search(r"### A trained checkpoint in Python.*?```python\n(.*?)```", text, re.S).group(1)
    assert '"box_ckpt"' in code
    ns = {}
    exec(compile(code.replace('"box_ckpt"', repr(ck)), "docs/dacm.md", "exec"), ns)
    pos = np.asarray(ns["traj"].pos)
    assert ns["meta"]["shape"] == "box" and pos.shape == (101, 3) and np.all(np.isfinite(pos))
    assert pos[0, 2] == 0.3 and pos[-1, 2] < 0.3 and np.min(pos[:, 2]) > 0.05 - 2e-3  # half-width 0.05 m


@pytest.mark.parametrize("change, says", [
    ({"shape": np.array("hexagon")}, "shape 'hexagon' is not one of"),
    ({"dim": np.array(2)}, "dim 2 does not match shape 'box'"),
    ({"x": np.ones((40, 23), np.int32)}, "x must be float32 or float64, got int32"),
    ({"x": np.ones((40, 23), np.float16)}, "x must be float32 or float64, got float16"),
    ({"wrench": np.ones((40, 6), np.int64)}, "wrench must be float32 or float64"),
    ({"kind": np.full(40, 7)}, r"kind \[7\] is not a patch type of a 3D body"),
    ({"kind": np.full(40, 1.0)}, "kind must be integers"),
    ({"label": np.full(40, 0.5)}, "label must be integers"),
    ({"throw": np.full(40, 6)}, r"throw indices must lie in \[0, n_throws = 6\)"),
])
def test_dacm_data_is_checked_before_any_training(change, says, tmp_path, capsys, fake_dacm_data):
    """Issue 38: data of an unknown kind or int32 features trained on truncated inputs, data of an
    unknown shape trained 19 s before evaluate refused the checkpoint. ``data.load`` refuses them,
    and ``dacm train`` in one line before training (nothing written)."""
    from jaxcontact.cli import main

    good = fake_dacm_data(tmp_path / "good.npz")
    assert len(D.load(good)["x"]) == 40
    bad = fake_dacm_data(tmp_path / "bad.npz", **change)
    with pytest.raises(ValueError, match=says):
        D.load(bad)
    capsys.readouterr()
    assert main(["dacm", "train", "--data", str(bad), "--out", str(tmp_path / "ck"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0] and not (tmp_path / "ck").exists(), err


@pytest.mark.slow
def test_extracted_impulses_match_ground_truth_step(tiny_run):
    """p = M(v⁺ − v¹) of an instance reproduces the recorded next velocity; labels consistent."""
    _, data, _ = tiny_run
    d = D.load(data)
    lin = np.linalg.norm(d["impulse"][:, :3], axis=1)
    assert np.all(lin[d["label"] == F.DETACH] <= F.DETACH_IMPULSE)
    assert np.all(lin[d["label"] != F.DETACH] > F.DETACH_IMPULSE)
    # the normal force is repulsive
    assert np.all(d["wrench"][:, 3] >= -1e-9)
    # a point patch has no torsional friction about its centre
    assert np.max(np.abs(d["wrench"][d["kind"] == 1][:, 2])) < 1e-9


@pytest.mark.slow
def test_physics_gap_input_separates_detach_from_contact(tiny_run):
    """A point patch detaches (no impulse) exactly when its gap velocity φ/h + v_n ≥ 0: the first
    physics input must carry that boundary with the right sign for every instance."""
    _, data, _ = tiny_run
    d = D.load(data)
    pt = d["kind"] == 1
    assert pt.sum() > 5
    assert np.array_equal(d["label"][pt] == F.DETACH, d["x_extra"][pt, 0] >= 0)


@pytest.mark.parametrize("inputs", ["physics", "coulomb"])
def test_physics_stick_input_of_a_sliding_box_and_law_matches_data(inputs):
    """Box flat on the ground sliding at 1 mm/s along x: p_n⁰ = m g h and the stick impulse is
    −m v, so the stick ratio input is −v/(g h); the coulomb inputs: every vertex slides along +x
    at 1 mm/s (σ = −1/√2 with ε = 1 mm/s), carries a quarter of p_n⁰, no torsion by symmetry,
    centre of pressure at the patch centre, no normal–tangential coupling at the face centre.
    The law computes the same inputs as the data."""
    from jaxcontact.dacm.data import _instances

    law = DACMLaw(3, inputs=inputs, **SMALL)
    body, C = make_body("box")
    model = jc.Model(law=law, dt=0.002, max_contacts=C)
    params = jc.Params(body=body, ground=jc.Ground.flat(3), law=law.init_params())
    s = jc.make_state(pos=(0.0, 0.0, 0.05), vel=(1e-3, 0.0, 0.0))
    v1 = jc.free_velocity(model, params, s)
    inst = _instances(model, params, s, s)
    xe = np.asarray(inst["x_extra"])
    assert xe.shape == (F.num_extra_features(3),)
    g_h = 9.81 * 0.002
    np.testing.assert_allclose(np.asarray(inst["pn0"]), float(body.mass) * g_h, rtol=1e-4)  # PGS tolerance
    nphys = F.N_PHYSICS[3]
    np.testing.assert_allclose(xe[nphys - 3:nphys], [-1e-3 / g_h, 0.0, 0.0], atol=1e-5)
    np.testing.assert_allclose(xe[1:3], [1e-3 / np.hypot(1e-3, F.SLIP_EPS), 0.0], atol=1e-9)
    # coulomb inputs: s (2), torsion, centre of pressure (2), coupling (2)
    np.testing.assert_allclose(xe[nphys:], [-1 / np.sqrt(2), 0, 0, 0, 0, 0, 0], atol=1e-4)
    _, x_law, _, _ = jax.jit(lambda p, st, v: law.predict(model, p, st, v))(params, s, v1)
    assert x_law.shape == (F.num_features(3, inputs),)
    np.testing.assert_allclose(np.asarray(x_law), xe[: F.num_features(3, inputs)], rtol=1e-9, atol=1e-12)


def test_coulomb_inputs_need_data_of_this_version():
    x = np.zeros((4, 23))
    with pytest.raises(ValueError, match="regenerate"):
        F.select_inputs(x, np.zeros((4, F.N_PHYSICS[3])), "coulomb")
    assert F.select_inputs(x, np.zeros((4, F.N_PHYSICS[3])), "physics").shape == (4, F.N_PHYSICS[3])
    assert F.select_inputs(x, np.zeros((4, F.num_extra_features(3))), "physics").shape == (4, F.N_PHYSICS[3])


def test_steady_sliding_subsampling_keeps_impacts():
    n = 100
    pn0 = np.full(n, 0.00726)
    pn0[[5, 70]] = 0.5  # two landing impacts
    data = {"dim": np.array(3), "kind": np.full(n, 3), "label": np.full(n, F.DYNAMIC), "pn0": pn0,
            "throw": np.r_[np.zeros(60, int), np.ones(40, int)]}
    keep = T.subsample_steady(data, 5)
    assert keep[5] and keep[70]
    assert 4 <= keep[:60].sum() - 1 <= 5 and 4 <= keep[60:].sum() - 1 <= 5


def test_early_stopping_returns_the_best_validation_epoch():
    from jaxcontact.dacm.networks import NetConfig

    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]])).astype(np.float32)
    xv = rng.normal(size=(64, 3)).astype(np.float32)
    yv = rng.normal(size=(64, 1)).astype(np.float32)  # unrelated: validation loss soon rises
    cfg = NetConfig((16,), 60, 0.0, 1e-2, 32)
    v, rep = T.fit(cfg, x, y, 1, "regress", 0, val=(xv, yv), patience=3)
    assert rep["best_epoch"] <= rep["epochs_run"] <= rep["best_epoch"] + 3
    loss = float(np.mean((T.predict((16,), 1, v, xv) - yv) ** 2))
    np.testing.assert_allclose(loss, rep["best_val_loss"], rtol=1e-5)

    class Bar:  # a progress bar changes nothing but the display
        n = 0

        def update(self, k):
            self.n += k

        def set_postfix(self, **kw):
            pass

    bar = Bar()
    _, rep2 = T.fit(cfg, x, y, 1, "regress", 0, val=(xv, yv), patience=3, bar=bar)
    assert (rep2["epochs_run"], rep2["best_epoch"], rep2["stopped_by"]) == (rep["epochs_run"], rep["best_epoch"], rep["stopped_by"])
    assert bar.n in (rep2["epochs_run"], rep2["epochs_run"] - 1)


def test_weighted_fit_weights_training_and_validation_alike():
    """Per-sample weights (train --regressor-weight pn0): a sample with zero weight does not pull
    the fit, and the reported validation loss is the weighted one of the returned network."""
    from jaxcontact.dacm.networks import NetConfig

    rng = np.random.default_rng(1)
    x = rng.normal(size=(256, 2)).astype(np.float32)
    y = (x @ np.array([[1.0], [-1.0]])).astype(np.float32)
    w = np.ones(256)
    y[:64] += 5.0  # corrupted targets, weighted out
    w[:64] = 0.0
    wv = rng.uniform(0.1, 3.0, 64)
    cfg = NetConfig((16,), 80, 0.0, 1e-2, 32)
    v, rep = T.fit(cfg, x, y, 1, "regress", 0, weights=w, val=(x[64:128], y[64:128], wv), patience=10)
    pred = T.predict((16,), 1, v, x[64:128])
    np.testing.assert_allclose(rep["best_val_loss"], np.mean(wv / wv.mean() * (pred - y[64:128])[:, 0] ** 2), rtol=1e-4)
    assert float(np.mean((T.predict((16,), 1, v, x[128:]) - y[128:]) ** 2)) < 0.1  # the clean relation
    with pytest.raises(ValueError, match="regressor_weight"):
        T.train({"dim": np.array(3)}, regressor_weight="impulse")
    with pytest.raises(ValueError, match="friction_target='ratio'"):
        T.train({"dim": np.array(3)}, regressor_weight="pn0")


@pytest.mark.slow
def test_slide_fraction_mixes_throws_and_keeps_the_random_ones():
    m = D.slide_mask(10, 0.5)
    assert m.sum() == 5 and not (m[:-1] & m[1:]).any()  # spread evenly
    assert D.slide_mask(6, 0.0).sum() == 0 and D.slide_mask(6, 1.0).all()
    with pytest.raises(ValueError, match="slide-fraction"):
        D.slide_mask(4, 1.5)
    r, mix = D.throws("box", 6, 0), D.throws("box", 6, 0, 0.5)
    keep = ~D.slide_mask(6, 0.5)
    np.testing.assert_array_equal(np.asarray(mix.pos)[keep], np.asarray(r.pos)[keep])  # same random throws
    s = D.throws("box", 64, 0, 1.0)
    body, _ = make_body("box")
    R = jax.vmap(jc.rotations.quat_to_mat)(s.quat)
    low = np.min(np.einsum("bij,kj->bki", np.asarray(R), np.asarray(body.vertices))[..., 2], 1) + np.asarray(s.pos[:, 2])
    lo, hi = D.SLIDE_RANGES["gap"]
    assert np.all((low >= lo - 1e-9) & (low <= hi + 1e-9))
    assert np.all(np.degrees(np.arccos(np.asarray(R[:, 2, 2]))) <= np.degrees(D.SLIDE_RANGES["tilt"][1]) + 1e-6)
    sp = np.linalg.norm(np.asarray(s.vel[:, :2]), axis=1)
    assert np.all((sp >= 0.5 - 1e-9) & (sp <= 3.0 + 1e-9))


@pytest.mark.slow
def test_slide_preset_produces_sliding_face_contacts():
    """Anisotropic μ = (0.75, 1.5): random throws almost never slide on a face; sliding throws
    land on a face and slide (patch velocity > 0.1 m/s) in most throws."""
    d, _ = D.generate("box", 4, 0, anisotropic=True, steps=150, slide_fraction=1.0)
    face_dyn = (d["kind"] == 3) & (d["label"] == F.DYNAMIC)
    vc = d["x"][:, -4:-1]  # velocity of the body point at the patch centre
    sliding = face_dyn & (np.linalg.norm(vc[:, :2], axis=1) > 0.1)
    assert len(np.unique(d["throw"][sliding])) >= 3
    assert sliding.sum() >= 20
    assert float(d["slide_fraction"]) == 1.0 and D.summary(d)["slide_fraction"] == 1.0


def test_dynamic_branch_with_ground_truth_friction_reproduces_the_coulomb_impulse():
    """Algorithm 1's decomposition is exact for a dynamic point impact: given the GT friction
    wrench, v² = v¹ + M⁻¹T_f p_f and the frictionless LCP give back the Coulomb-LCP impulse
    (what the oracle diagnosis, python -m studies.dacm oracle, relies on). The corner touches the
    ground: for a vertex above it the patch centre (its ground projection) moves the friction's
    point of application, and its tangential torque lands in the normal block (0.2 % at 1 mm)."""
    from jaxcontact.laws import CoulombLCP

    model, params = setup("box", None)
    gt_law = D.GROUND_TRUTH_LAW  # the family's ground truth: the square (DART's), as the features model it
    assert isinstance(gt_law, CoulombLCP) and gt_law.solver.cone == "box"
    gt_params = params.replace(law=gt_law.init_params(mu=D.ISO_MU))
    axis = np.array([0.8, 0.5, 0.3]) / np.linalg.norm([0.8, 0.5, 0.3])
    q = np.r_[np.cos(0.35), np.sin(0.35) * axis]  # tilted: one corner lowest
    s = jc.make_state(pos=(0.0, 0.0, 0.0), quat=q, vel=(1.0, 0.5, -2.0), omega=(0.0, 3.0, 1.0))
    low = float(geometry.world_points(s, params.body.vertices)[:, 2].min())
    s = s.replace(pos=s.pos.at[2].set(-low))  # corner on the ground: the patch centre is the vertex

    @jax.jit
    def both(params, gt_params, s):
        v1 = jc.free_velocity(model, params, s)
        p_gt, _ = gt_law(model, gt_params, s, v1)
        patch = F.detect_patch(params.body, params.ground, s, v1, model.patch_tol, model.dt)
        lab = F.label(params.body, params.ground, s, v1 + geometry.mass_matrix_inverse(params.body, s) @ p_gt,
                      p_gt, patch, model.dt)
        w = F.to_patch_frame(params.ground, s, patch.centre, p_gt)
        wf = jnp.zeros(6).at[:3].set(w[:3])
        p, info = model.law.impulse(model, params, s, v1, patch, lab, wf)
        return p, p_gt, lab, patch.kind

    p, p_gt, lab, kind = both(params, gt_params, s)
    assert int(kind) == 1 and int(lab) == F.DYNAMIC
    assert float(jnp.linalg.norm(p_gt[:3])) > 0.05
    np.testing.assert_allclose(np.asarray(p), np.asarray(p_gt), rtol=1e-4, atol=1e-7)


def test_residual_head_is_the_coulomb_friction_of_a_sliding_point_impact():
    """The residual friction head's sliding-Coulomb term with m = μ reproduces the Coulomb-LCP
    friction ratio p_f / p_n⁰ of a corner impact that slides through the step (including the
    normal–tangential coupling: without the denominator it is off by several per cent), and
    ``fit_coulomb_head`` recovers coefficients from exact targets."""
    from jaxcontact.dacm.data import _instances
    from jaxcontact.laws import CoulombLCP

    model, params = setup("box", None)
    gt_law = D.GROUND_TRUTH_LAW  # the family's ground truth: the square (DART's), as the features model it
    assert isinstance(gt_law, CoulombLCP) and gt_law.solver.cone == "box"
    gt_params = params.replace(law=gt_law.init_params(mu=D.ISO_MU))
    axis = np.array([0.8, 0.5, 0.3]) / np.linalg.norm([0.8, 0.5, 0.3])
    q = np.r_[np.cos(0.35), np.sin(0.35) * axis]
    s = jc.make_state(pos=(0.0, 0.0, 0.0), quat=q, vel=(2.0, -3.0, -1.5), omega=(0.0, 3.0, 1.0))
    low = float(geometry.world_points(s, params.body.vertices)[:, 2].min())
    s = s.replace(pos=s.pos.at[2].set(-low))
    v1 = jc.free_velocity(model, params, s)
    p_gt, _ = gt_law(model, gt_params, s, v1)
    inst = _instances(model, params, s, s)
    assert int(inst["kind"]) == 1
    w = np.asarray(F.to_patch_frame(params.ground, s, inst["centre"], p_gt))
    ratio = w[:2] / float(inst["pn0"])
    assert np.all(np.abs(ratio) > 0.1)  # both axes slide: |p_f,k| = μ p_n
    x = np.asarray(inst["x_extra"])
    mu = np.array([D.ISO_MU, D.ISO_MU])
    np.testing.assert_allclose(np.asarray(F.coulomb_head(mu, x, 3)), ratio, rtol=1e-5)
    uncoupled = mu * x[F.N_PHYSICS[3]:F.N_PHYSICS[3] + 2]
    assert np.max(np.abs(uncoupled - ratio) / np.abs(ratio)) > 0.1
    # least-squares recovery of the coefficients from exact targets (random rows)
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(200, F.num_features(3, "coulomb"))) * 0.5
    m = np.array([0.3, 0.2, 0.1])
    np.testing.assert_allclose(F.fit_coulomb_head(xs, F.coulomb_head(m, xs, 3), 3), m, atol=1e-6)


@pytest.mark.slow
def test_residual_head_training_law_and_one_step_agree(tiny_run, tmp_path):
    """Train with --friction-head residual (and impulse-weighted regressors) on tiny data: the checkpoint carries the fitted head
    coefficients, the law's friction wrench equals head + network evaluated on the data's inputs
    (× p_n⁰), and the residual head needs the coulomb inputs and the ratio target."""
    from jaxcontact.cli import main

    with pytest.raises(ValueError, match="residual"):
        DACMLaw(3, inputs="physics", friction_target="ratio", friction_head="residual")
    with pytest.raises(ValueError, match="friction_head"):
        DACMLaw(3, friction_head="linear")
    _, data, _ = tiny_run
    ck = str(tmp_path / "ck")
    assert main(["dacm", "train", "--data", data, "--out", ck, "--preset", "paper", "--no-progress",
                 "--clf-epochs", "1", "--reg-epochs", "2",
                 "--hidden-scale", "0.05", "--friction-target", "ratio", "--inputs", "coulomb",
                 "--friction-head", "residual", "--regressor-weight", "pn0"]) == 0
    dl, dp, _, _, meta = T.load_checkpoint(ck)
    assert dl.friction_head == "residual" and meta["friction_head"] == "residual"
    assert meta["regressor_weight"] == "pn0"
    d = D.load(data)
    for name in ("point", "line", "face"):
        head = np.asarray(dp["norm"][name]["head"])
        assert head.shape == ((2,) if name == "point" else (3,))
        assert meta["report"][name]["head"] == pytest.approx(head.tolist(), abs=1e-5)
    # the head fitted on the point instances is close to μ (most dynamic points slide)
    assert 0.05 < float(np.asarray(dp["norm"]["point"]["head"])[0]) < 0.4
    # the law (jitted, one body) gives head + network on its own inputs, scaled by p_n⁰
    from jaxcontact.dacm.data import _instances

    body, C = make_body("box")
    model = jc.Model(law=dl, dt=float(d["dt"]), max_contacts=C)
    params = jc.Params(body=body, ground=jc.Ground.flat(3), law=dp)
    axis = np.array([0.8, 0.5, 0.3]) / np.linalg.norm([0.8, 0.5, 0.3])
    s = jc.make_state(pos=(0.0, 0.0, 0.0), quat=np.r_[np.cos(0.35), np.sin(0.35) * axis],
                      vel=(2.0, -3.0, -1.5), omega=(0.0, 3.0, 1.0))
    s = s.replace(pos=s.pos.at[2].set(-float(geometry.world_points(s, body.vertices)[:, 2].min())))
    v1 = jc.free_velocity(model, params, s)
    patch, x_law, _, wf = jax.jit(lambda p, st, v: dl.predict(model, p, st, v))(params, s, v1)
    assert int(patch.kind) == 1
    inst = _instances(model, params, s, s)
    xd = np.asarray(inst["x_extra"])[None]
    np.testing.assert_allclose(np.asarray(x_law), xd[0], rtol=1e-9, atol=1e-12)
    st = {a: np.asarray(b) for a, b in dp["norm"]["point"].items()}
    y_net = T.predict(dl.reg_hidden, 2, dp["reg"]["point"], (xd - st["x_mean"]) / st["x_std"])
    y = np.asarray(dl.friction_output(st, y_net, xd))[0]
    np.testing.assert_allclose(y - np.asarray(F.coulomb_head(st["head"], xd, 3))[0],
                               y_net[0] * st["y_std"] + st["y_mean"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(wf)[:2], y * float(F.friction_scale(inst["pn0"])), rtol=1e-4, atol=1e-8)
    assert np.all(np.asarray(wf)[2:] == 0.0)


@pytest.mark.slow
def test_chain_command_end_to_end_on_a_tiny_link_checkpoint(tmp_path, capsys):
    """``dacm generate --shape link`` → ``dacm train`` (tiny) → ``dacm chain``: the command runs the
    ground truth, the split with the exact Coulomb law as H and the split with the checkpoint. The
    exact-H split reproduces the ground truth (the split itself is exact: docs/chains.md, 0.0006 rad
    on the default swings), the root finding converges, and the swing reaches the ground."""
    from jaxcontact.cli import main

    data, ck = str(tmp_path / "link.npz"), str(tmp_path / "ck")
    assert main(["dacm", "generate", "--shape", "link", "--throws", "3", "--steps", "200", "--seed", "0",
                 "--out", data]) == 0
    assert main(["dacm", "train", "--data", data, "--out", ck, "--preset", "paper", "--no-progress",
                 "--clf-epochs", "2", "--reg-epochs", "2", "--hidden-scale", "0.05", "--max-rest-per-throw", "10",
                 "--max-steady-per-throw", "10"]) == 0
    capsys.readouterr()
    assert main(["dacm", "chain", "--checkpoint", ck, "--swings", "1", "--steps", "250", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    gt, exact, learned = res["ground_truth"], res["models"]["exact_coulomb"], res["models"]["dacm"]
    assert gt["first_contact_step"][0] < 250 and gt["distal_contact_steps_fraction"] > 0  # it lands
    assert exact["converged_fraction"] == 1.0 and exact["joint_angle_error_mean"] < 1e-2, exact
    assert np.isfinite(learned["joint_angle_error_mean"]) and learned["g_evaluations_mean"] >= 1
