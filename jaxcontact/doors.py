"""What every public door shares: the one eager wrapper (``enter``) and a rollout's last states.

Every way to step (a body's ``step``/``step_with_info``/``rollout``/``batch_rollout``, a world's,
a chain's, the sharded batches) checks its arguments' types and its static settings first (in any
tracing context), then calls ``enter``: under a user's ``jit``/``vmap``/``grad`` (inputs not
concrete) the door's program runs and nothing else (the step's ``Flags`` report); on concrete
inputs ``enter`` validates them (raising ``ValueError`` naming the field), runs the door's eager
program (compiled at the top level, watching its solves) and warns on what came out. The warnings
of the validation and of the run are collected and raised again at the user's line (the first
frame outside the package), so every door's warnings point at the caller however deep the
door's own frames are.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable

import jax

from .validation import is_concrete

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _user_level() -> int:
    """The ``stacklevel`` (for ``warnings.warn`` in the function that calls this) of the first frame
    outside the package: the user's call of the door."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def enter(inputs, run: Callable[[bool], Any], validate: Callable[[], None] | None = None,
          warn: Callable[[Any], Any] | None = None, check: bool = True):
    """A door's run. ``inputs``: the arrays whose concreteness decides (a pytree); ``run(eager)``: the
    door's program (``eager`` False: the traced one, True: the eager one, which may return extra
    outputs for ``warn``); ``validate()``: the eager checks of the inputs (raise, or warn on the start);
    ``warn(out)``: the warnings on the eager program's output, returning what the door returns;
    ``check`` False: no validation and no warnings (``batch_rollout(validate=False)``). Warnings raised
    by ``validate``, the run and ``warn`` (a library's too) are raised again at the user's call of the door."""
    if not (check and is_concrete(inputs)):
        return run(False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if validate is not None:
            validate()
        out = run(True)
        if warn is not None:
            out = warn(out)
    level = _user_level()
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=level)
    return out


def last_states(out, output: str, with_info: bool = True, batched: bool = False):
    """The last states of a rollout's output, for every door: ``out`` is ``final``, ``(final, Summary)``,
    ``trajectory`` or ``(trajectory, infos)`` (``output``, ``with_info``); the trajectory's step axis is
    the first, or the second with a leading batch axis (``batched``)."""
    states = out[0] if with_info else out
    if output == "final":
        return states
    return jax.tree_util.tree_map(lambda x: x[:, -1] if batched else x[-1], states)


__all__ = ["enter", "last_states"]
