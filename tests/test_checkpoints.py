"""Checkpoints of every kind: written atomically, every payload file verified on load (a changed
byte or a truncated file is a one-line error naming the file), training status recorded, --out
refused unless --force and replaced only by a complete checkpoint, Ctrl-C saving best-so-far."""

import json

import numpy as np
import pytest

from jaxcontact import checkpoint as C

VERTS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)


def _contactnets_checkpoint(path, status="finished"):
    import jax

    from jaxcontact.contactnets.train import init_theta, save_checkpoint

    meta = dict(variant="polytope", hidden=[], vertices=VERTS.tolist(), mu_nominal=0.3, noise=0.1)
    theta = init_theta(meta, jax.random.PRNGKey(0))
    save_checkpoint(path, meta, theta, status, {"epoch": 3, "step": 30})
    return theta


def _dacm_meta():
    from jaxcontact.dacm.networks import HyperParams
    from jaxcontact.dacm.train import CKPT_FORMAT

    hp = HyperParams.paper("box").scaled(1, 1, 0.02)
    return {"format": CKPT_FORMAT, "hyperparams": hp.to_dict(), "dim": 3, "shape": "box"}


def _dacm_checkpoint(path, status="finished"):
    from jaxcontact.dacm.train import laws_from_meta, save_checkpoint

    meta = _dacm_meta()
    dl, pl = laws_from_meta(meta)
    save_checkpoint(path, dl.init_params(), pl.init_params(), meta, status, {"network": "face pdd", "epoch": 1})


def _load(kind, path):
    if kind == "contactnets":
        from jaxcontact.contactnets.train import load_checkpoint

        return load_checkpoint(path)[0]
    from jaxcontact.dacm.train import load_checkpoint

    return load_checkpoint(path)[-1]


KINDS = {"contactnets": (_contactnets_checkpoint, ["params.msgpack"]),
         "dacm": (_dacm_checkpoint, ["dacm.msgpack", "pdd.msgpack"])}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_changed_or_truncated_weights_file_is_refused_naming_the_file(kind, tmp_path):
    make, files = KINDS[kind]
    ck = tmp_path / "ck"
    make(ck)
    meta = _load(kind, ck)
    assert meta["status"] == "finished" and set(meta["files"]) == set(files)
    for name in files:
        blob = (ck / name).read_bytes()
        for bad in (blob[:100] + bytes([blob[100] ^ 0x01]) + blob[101:],  # one bit of one byte flipped
                    blob[: len(blob) // 2]):  # truncated
            (ck / name).write_bytes(bad)
            with pytest.raises(ValueError) as e:
                _load(kind, ck)
            msg = str(e.value)
            assert "\n" not in msg and str(ck / name) in msg and "checksum" in msg, msg
        (ck / name).unlink()
        with pytest.raises(ValueError, match="missing"):
            _load(kind, ck)
        (ck / name).write_bytes(blob)
        assert _load(kind, ck)["files"] == meta["files"]


@pytest.mark.parametrize("kind", list(KINDS))
def test_an_edited_meta_json_is_refused(kind, tmp_path):
    """meta.json is covered by its own checksum: an edited value (the issue's "shape": "box" ->
    "pentagon"), a removed checksum or a changed payload checksum is refused on load; a re-layout
    of the same JSON (indentation, key order) loads."""
    make, _ = KINDS[kind]
    ck = tmp_path / "ck"
    make(ck)
    text = (ck / "meta.json").read_text()
    meta = json.loads(text)
    edits = [dict(meta, shape="pentagon"), dict(meta, status="finished", reached={"epoch": 10**6}),
             {k: v for k, v in meta.items() if k != C.META_SUM},
             dict(meta, files={k: "0" * 64 for k in meta["files"]})]
    for edited in edits:
        (ck / "meta.json").write_text(json.dumps(edited, indent=1))
        with pytest.raises(ValueError) as e:
            _load(kind, ck)
        msg = str(e.value)
        assert "\n" not in msg and str(ck / "meta.json") in msg and "checksum" in msg, msg
    (ck / "meta.json").write_text(json.dumps(dict(reversed(list(meta.items())))))  # same content, other layout
    assert _load(kind, ck)["files"] == meta["files"]


@pytest.mark.parametrize("kind", list(KINDS))
def test_status_and_progress_are_recorded_and_warned_about(kind, tmp_path):
    make, _ = KINDS[kind]
    for status in C.STATUSES:
        make(tmp_path / status, status)
        meta = _load(kind, tmp_path / status)
        assert meta["status"] == status and meta["reached"]
        warning = C.status_warning(tmp_path / status, meta)
        if status == "finished":
            assert warning is None
        else:
            assert warning.startswith("warning:") and status.replace("_", " ") in warning and "\n" not in warning
            assert str(tmp_path / status) in warning
    with pytest.raises(ValueError, match="status"):
        C.write_checkpoint(tmp_path / "x", {}, {}, "done")


def test_old_formats_contactnets_loaded_if_its_checksum_verifies_dacm_refused(tmp_path):
    import hashlib

    from jaxcontact.contactnets.train import FORMAT_V1, load_checkpoint
    from jaxcontact.dacm.train import CKPT_FORMAT_V1
    from jaxcontact.dacm.train import load_checkpoint as load_dacm

    ck = tmp_path / "cn"
    _contactnets_checkpoint(ck)
    meta = json.loads((ck / "meta.json").read_text())
    blob = (ck / "params.msgpack").read_bytes()
    for k in ("files", "status", "reached", C.META_SUM):  # the first format recorded none of these
        meta.pop(k)
    meta.update(format=FORMAT_V1, params_sha256=hashlib.sha256(blob).hexdigest())
    (ck / "meta.json").write_text(json.dumps(meta))
    old = load_checkpoint(ck)[0]
    assert old["status"] is None and "older version" in C.status_warning(ck, old)
    (ck / "params.msgpack").write_bytes(blob[:-1] + bytes([blob[-1] ^ 0x10]))
    with pytest.raises(ValueError, match="params.msgpack"):
        load_checkpoint(ck)
    dk = tmp_path / "dacm"
    _dacm_checkpoint(dk)
    meta = json.loads((dk / "meta.json").read_text())
    for k in ("files", "status", "reached", C.META_SUM):
        meta.pop(k)
    (dk / "meta.json").write_text(json.dumps(dict(meta, format=CKPT_FORMAT_V1)))
    with pytest.raises(ValueError, match="retrain"):
        load_dacm(dk)


def test_a_failed_write_leaves_the_previous_checkpoint_and_no_debris(tmp_path):
    ck = tmp_path / "ck"
    C.write_checkpoint(ck, {"w.bin": b"old"}, {"k": 1}, "finished")
    with pytest.raises(TypeError):  # the second payload is not bytes: the write fails half-way
        C.write_checkpoint(ck, {"w.bin": b"new", "x.bin": None}, {"k": 2}, "finished")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]
    meta = C.read_meta(ck)
    assert meta["k"] == 1 and C.verified_files(ck, meta, ["w.bin"]) == {"w.bin": b"old"}
    # a replacement that completes swaps the whole directory (no file of the old one is left)
    C.write_checkpoint(ck, {"v.bin": b"new"}, {"k": 3}, "in_progress")
    assert sorted(p.name for p in ck.iterdir()) == ["meta.json", "v.bin"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


def test_output_directory_refused_unless_force_and_replaced_only_when_finished(tmp_path):
    out = tmp_path / "out"
    C.RunDirectory(out, force=False).save({"w": b"1"}, {"run": 1}, "finished")
    with pytest.raises(ValueError, match="--force") as e:
        C.RunDirectory(out, force=False)
    assert "\n" not in str(e.value)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        C.check_output_dir(tmp_path / "file", force=True)
    with pytest.raises(ValueError, match="not a directory"):  # cannot be created under a file
        C.check_output_dir(tmp_path / "file" / "out", force=True)
    C.check_output_dir(tmp_path / "no" / "out", force=False)  # missing parents: created on save
    assert not (tmp_path / "no").exists()
    C.check_output_dir(tmp_path / "new", force=False)  # new or empty: fine, nothing created
    assert not (tmp_path / "new").exists()
    run = C.RunDirectory(out, force=True)
    run.save({"w": b"2"}, {"run": 2}, "in_progress")
    assert C.read_meta(out)["run"] == 1 and C.read_meta(run.work)["status"] == "in_progress"
    assert "unchanged" in run.where()
    run.save({"w": b"2"}, {"run": 2}, "finished")
    assert C.read_meta(out)["run"] == 2 and C.read_meta(out)["status"] == "finished"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "out"]


def test_dacm_fit_stops_on_ctrl_c_and_keeps_the_weights_reached():
    from jaxcontact.dacm.networks import NetConfig
    from jaxcontact.dacm.train import fit

    class Bar:  # Ctrl-C arrives while epoch 3's progress is drawn
        n = 0

        def set_postfix(self, **kw):
            pass

        def update(self, k):
            self.n += k
            if self.n == 3:
                raise KeyboardInterrupt

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    v, rep = fit(NetConfig((8,), 50, 0.0, batch=16), x, y, 1, "regress", 0, bar=Bar())
    assert rep["stopped_by"] == "interrupted" and rep["epochs_run"] == 3 and rep["epochs_asked"] == 50
    v2, rep2 = fit(NetConfig((8,), 3, 0.0, batch=16), x, y, 1, "regress", 0)
    import jax

    same = jax.tree_util.tree_map(lambda a, b: np.array_equal(np.asarray(a), np.asarray(b)), v, v2)
    assert all(jax.tree_util.tree_leaves(same))  # the weights of 3 finished epochs


def test_dacm_train_ctrl_c_saves_an_interrupted_checkpoint_with_one_line(tmp_path, monkeypatch, capsys):
    """dacm train's command: the partial result of train() is saved, marked interrupted, exit 130."""
    from jaxcontact.cli import main
    from jaxcontact.dacm import train as T
    from jaxcontact.dacm.train import laws_from_meta

    data = tmp_path / "d.npz"
    data.write_bytes(b"")  # only hashed (data_record); loading is replaced below
    meta = _dacm_meta()
    dl, pl = laws_from_meta(meta)

    def interrupted_train(*a, **k):
        m = dict(meta, report={}, interrupted={"network": "edge regressor", "epoch": 4,
                                               "untrained_networks": ["edge pdd", "face classifier"], "networks": 9})
        raise C.TrainingInterrupted("interrupted: edge regressor stopped at epoch 4, 2 of 9 networks untrained",
                                    partial=(dl.init_params(), pl.init_params(), m))

    import jaxcontact.dacm.data as D

    monkeypatch.setattr(D, "load", lambda p: {"dim": np.array(3), "anisotropic": np.array(False),
                                              "shape": np.array("box")})
    monkeypatch.setattr(T, "train", interrupted_train)
    out = tmp_path / "ck"
    rc = main(["dacm", "train", "--data", str(data), "--out", str(out), "--no-progress", "--preset", "paper"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 130 and len(err) == 1 and err[0].startswith("interrupted:") and str(out) in err[0], err
    m = T.load_checkpoint(out)[-1]
    assert m["status"] == "interrupted" and m["reached"] == {"network": "edge regressor", "epoch": 4,
                                                             "untrained_networks": 2}
    # again without --force: refused before anything is loaded; with --force over it: kept aside
    rc = main(["dacm", "train", "--data", str(data), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--force" in err[0]
    rc = main(["dacm", "train", "--data", str(data), "--out", str(out), "--no-progress", "--preset", "paper",
               "--force"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 130 and len(err) == 1 and "ck.partial" in err[0] and "unchanged" in err[0]
    assert T.load_checkpoint(str(out) + ".partial")[-1]["status"] == "interrupted"

