#!/usr/bin/env bash
# One accelerator lease, one call: install the carried wheels, then python -m benchmarks gpu_run.
#   benchmarks/gpu_run.sh --out "$OUT" [--commit SHA] [more gpu_run options]
#   benchmarks/gpu_run.sh --device cpu --smoke --out /tmp/gpu      # the same script on a CPU, tiny sizes
# The GPU machine has JAX but not jaxopt, mujoco or mujoco-mjx: put their wheels (and glfw, pyopengl,
# trimesh, websockets, mujoco-core, mujoco-studio) for its Python in .whl/ (git-ignored; the command
# is in docs/performance.md) and carry that folder with the call.
set -uo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/jc_site .whl/*.whl \
    || { echo "installing the carried wheels failed" >&2; exit 2; }
  export PYTHONPATH=/tmp/jc_site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
python3 -m benchmarks gpu_run "$@"
