#!/usr/bin/env bash
# The GPU checks, in one command for whoever next has a GPU (one H100 or H200; about 8 minutes for
# all three parts). Writes under $OUT (default bench-results/gpu-check) and prints a table per part.
#
#   bash bench/gpu_check.sh                 # all: families, dit, sd15
#   bash bench/gpu_check.sh families dit    # some parts
#
# families: a tiny random-weight pipeline of every supported family (tests/tiny_pipelines.py) through
#           the runner's CUDA defaults (auto batch, bf16, channels-last, fused QKV, every denoiser
#           compiled): what was compiled, laid out, fused, and any error (bench/gpu_families.py)
# dit:      FLUX.1-dev and SD 3.5 Medium at real size (random weights): images/s, peak memory, floor
# sd15:     SD 1.5 at real size: the runner's default path beside the batch-1 fp16 loop
#
# Where diffusers, open_clip and datasets are not installed (this workplace's GPU machines), carry
# them as wheels in .whl/ (docs/performance.md says how); they are installed first.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-bench-results/gpu-check}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -d .whl ] && ! python3 -c "import diffusers" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/t2ibench-site \
        .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/t2ibench-site${PYTHONPATH:+:$PYTHONPATH}"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(families dit sd15)
status=0
for part in "${parts[@]}"; do
    echo "== $part ($(date -u +%H:%M:%S))"
    case "$part" in
        families)
            timeout "${FAMILIES_TIMEOUT:-300}" python3 bench/gpu_families.py --device cuda --out "$OUT/families" \
                ${FAMILIES:+--families $FAMILIES} 2>&1 | grep -v -i warning | tee "$OUT/families.log" || status=1 ;;
        dit)
            timeout "${DIT_TIMEOUT:-200}" python3 bench/generation.py --models flux-dev sd35-medium --device cuda \
                --n-images 2 --batch-size 4 --out "$OUT/dit" 2>&1 | grep -v -i warning | tee "$OUT/dit.log" || status=1 ;;
        sd15)
            timeout "${SD15_TIMEOUT:-240}" python3 bench/generation.py --models sd15 --device cuda \
                --configs runner,batch1-fp16 --n-images 32 --out "$OUT/sd15" 2>&1 | grep -v -i warning \
                | tee "$OUT/sd15.log" || status=1 ;;
        *) echo "unknown part $part (families, dit, sd15)" >&2; exit 2 ;;
    esac
done
exit $status
