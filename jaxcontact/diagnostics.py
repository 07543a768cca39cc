"""Turn a run's flags into counts and sentences: "3 of 4096 bodies went non-finite at step 212".

Every step fills ``ContactInfo.flags`` (``types.Flags``), in any tracing context; a rollout with
``output="final", with_info=True`` returns their ``Summary`` instead of per-step infos. Both
work here, with any leading batch axes:

* ``counts(x)`` — per flag: how many bodies raised it and the first step that did;
* ``report(x, dt=None)`` — the same as sentences (``"all N bodies clean"`` when nothing was raised;
  a world's infos or ``Summary`` count worlds and say how many bodies each has);
* ``check(x, dt=None)`` — raise ``CheckError`` with that report when a body had invalid input or
  went non-finite (the flags that mean a result is wrong; ``raise_on`` chooses).

This is the checked mode of a transformed run: return the ``Summary`` (or the infos) from your
``jit``/``vmap``/``grad`` function (``has_aux`` for ``grad``) and ``check`` it outside.

For ``ContactInfo`` the last axis is the step axis (as ``rollout``/``batch_rollout`` stack it);
a ``Summary`` already carries each flag's first step.
"""

from __future__ import annotations

import numpy as np

from .types import FLAG_NAMES, ContactInfo, Flags, Summary
from .validation import CheckError, rule_names


def _per_body(x):
    """(flags OR per body (B,), first step per flag per body (B, F), broken rules OR per body (B,))
    from an info or a summary."""
    bits = np.asarray([int(f) for f in Flags])
    if isinstance(x, Summary):
        flags = np.asarray(x.flags).reshape(-1)
        first = np.asarray(x.first_step).reshape(-1, len(bits))
        return flags, first, np.asarray(x.invalid).reshape(-1)
    if isinstance(x, ContactInfo) or _is_system_info(x):
        f = np.asarray(x.flags)
        inv = np.broadcast_to(np.asarray(x.invalid), f.shape)
        if f.ndim == 0:
            f, inv = f[None], inv[None]
        f = f.reshape(-1, f.shape[-1])  # (bodies, steps)
        inv = inv.reshape(-1, inv.shape[-1])
        raised = (f[..., None] & bits) != 0  # (B, T, F)
        any_ = raised.any(1)
        first = np.where(any_, raised.argmax(1), -1)
        first_inv = inv[np.arange(len(inv)), np.argmax(inv != 0, axis=1)]  # rules at the first invalid step
        return np.bitwise_or.reduce(f, axis=1), first, first_inv
    raise TypeError(f"expected a ContactInfo, a worlds.WorldInfo (a world's or a chain's) or a Summary, got "
                    f"{type(x).__name__}")


def _is_system_info(x) -> bool:
    """A ``worlds.WorldInfo`` (flags per step, one row per world or chain; not imported: the step
    depends on this package's core, not the other way)."""
    return type(x).__name__ == "WorldInfo" and hasattr(x, "flags") and hasattr(x, "invalid")


def _unit(x) -> str:
    if isinstance(x, Summary) or _is_system_info(x):
        return x.unit
    return "bodies"


_SINGULAR = {"bodies": "body", "worlds": "world", "chains": "chain"}


def _bodies_per(x) -> int:
    """Bodies per world (0: not a world, or not recorded)."""
    if isinstance(x, Summary):
        return int(x.bodies) if x.unit == "worlds" else 0
    if _is_system_info(x) and x.unit == "worlds":
        return int(np.shape(x.impulse)[np.ndim(x.flags)]) if np.ndim(x.impulse) > np.ndim(x.flags) else 0
    return 0


def counts(x) -> dict:
    """``{flag name: {"bodies": k, "of": n, "first_step": s, "body_ids": [...≤ 10]}}`` for every
    flag raised by at least one body (empty when the run is clean); ``invalid_input`` also lists
    the broken rules (``"fields"``)."""
    flags, first, invalid = _per_body(x)
    out = {}
    for j, f in enumerate(Flags):
        hit = (flags & int(f)) != 0
        if hit.any():
            ids = np.flatnonzero(hit)
            out[f.name.lower()] = {"bodies": int(hit.sum()), "of": int(flags.size),
                                   "first_step": int(first[hit, j].min()), "body_ids": ids[:10].tolist()}
            if f == Flags.INVALID_INPUT:
                out[f.name.lower()]["fields"] = rule_names(np.bitwise_or.reduce(invalid[hit]))
    return out


def report(x, dt: float | None = None) -> str:
    """One line per raised flag, e.g. ``3 of 4096 bodies went non-finite (first at step 212,
    t = 0.424 s; bodies 5, 17, 99)``."""
    c = counts(x)
    n = int(np.asarray(_per_body(x)[0]).size)
    unit = _unit(x)
    per = _bodies_per(x)
    if not c:
        size = f" ({per} bodies{' each' if n > 1 else ''})" if per else ""
        what = f"the {_SINGULAR.get(unit, unit)}" if n == 1 else f"all {n} {unit}"
        return f"{what}{size} clean (no invalid input, non-finite state, deep penetration or solver failure)"
    lines = []
    for f in Flags:
        k = f.name.lower()
        if k not in c:
            continue
        r = c[k]
        when = f"step {r['first_step']}" + (f", t = {(r['first_step'] + 1) * dt:.4g} s" if dt else "")
        ids = ", ".join(map(str, r["body_ids"])) + (", …" if r["bodies"] > len(r["body_ids"]) else "")
        verb = "went" if f == Flags.NONFINITE else "had"
        name = FLAG_NAMES[f]
        if f == Flags.PENETRATION and unit == "worlds":  # pairs are not projected out
            name = ("deep penetration (ground: projected out; body pairs: pushed apart at no more than "
                    "Model.max_correction_speed)")
        what = name + (f" — {'; '.join(r['fields'])}" if "fields" in r else "")
        size = f"; {per} bodies per world" if per else ""
        lines.append(f"{r['bodies']} of {r['of']} {unit} {verb} {what} (first at {when}; {unit} {ids}{size})")
    return "\n".join(lines)


def check(x, dt: float | None = None, raise_on: Flags = Flags.INVALID_INPUT | Flags.NONFINITE) -> None:
    """Raise ``CheckError`` (a ``ValueError``) with ``report(x, dt)`` when any body raised a flag
    in ``raise_on``; call it on the ``Summary``/infos your transformed function returned."""
    flags = _per_body(x)[0]
    if np.any(flags & int(raise_on)):
        raise CheckError(report(x, dt))


__all__ = ["check", "counts", "report"]
