#!/usr/bin/env bash
# The GPU checks in one command for whoever next has a GPU (one H100 or H200): the parts of
# bench/gpu_check.py (sd15, dit, full-audit, modes, sdxl; families by name), each under its own
# time budget, `all` within a 9-minute deadline (a part that would pass it is not started and the
# summary names the command that runs it). Writes $OUT/gpu_check.json and gpu_check.md (date,
# device, versions, every part's table, the targets) and each part's own output under $OUT/<part>/.
#
#   bash bench/gpu_check.sh all                  # or no argument: the same
#   bash bench/gpu_check.sh dit full-audit       # some parts
#   bash bench/gpu_check.sh --cpu sd15 modes     # the CPU dry path at tiny sizes (CI runs it)
#   FAMILIES="sd15 sdxl" bash bench/gpu_check.sh families   # some families only
#
# Where diffusers, open_clip or datasets are not installed (this workplace's GPU machines), carry
# them as wheels in .whl/ (docs/performance.md says how); they are installed first, without
# dependencies, into a folder put on PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-bench-results/gpu-check}"
export PYTHONUNBUFFERED=1
if ! python3 -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in sys.argv[1:]))" \
        diffusers open_clip datasets; then
    if compgen -G ".whl/*.whl" >/dev/null; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/t2ibench-site .whl/*.whl || exit 1
        export PYTHONPATH="/tmp/t2ibench-site${PYTHONPATH:+:$PYTHONPATH}"
    else
        echo "diffusers, open_clip or datasets is missing and .whl/ holds no wheels" >&2
    fi
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
exec python3 bench/gpu_check.py "$@"
