#!/usr/bin/env bash
# One call on a 2-GPU node (nvidia-h200-x2): collectives (grid + a random draw) and parallel steps (grid), packed
# into <= 15 MiB parts under $OUT. Usage: bash benchmarks/comm/run_x2.sh [collectives-draw-seed] [steps-draw-seed]
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
RUN=/tmp/comm_run; rm -rf "$RUN"; mkdir -p "$RUN"
LAUNCH="python3 -m torch.distributed.run --standalone --nproc_per_node=2"
nvidia-smi topo -m > "$RUN/topo.txt" 2>&1; nvidia-smi nvlink -s > "$RUN/nvlink.txt" 2>&1
if [ "${MODE:-fit}" = fit ]; then
  $LAUNCH benchmarks/comm/collectives.py --out "$RUN/comm" --grid --budget-s "${COMM_S:-140}" > "$RUN/comm.log" 2>&1
  $LAUNCH benchmarks/comm/collectives.py --out "$RUN/comm_draw" --draw "${1:-2031}" --cases 80 --budget-s "${DRAW_S:-30}" > "$RUN/comm_draw.log" 2>&1
  $LAUNCH benchmarks/comm/parallel_steps.py --out "$RUN/steps" --budget-s "${STEPS_S:-150}" --trace-budget-s "${TRACE_S:-30}" > "$RUN/steps.log" 2>&1
else  # the frozen test: random draws only
  $LAUNCH benchmarks/comm/collectives.py --out "$RUN/comm_test" --draw "${1:-2033}" --cases 120 --budget-s "${COMM_S:-80}" > "$RUN/comm_test.log" 2>&1
  $LAUNCH benchmarks/comm/parallel_steps.py --out "$RUN/steps_test" --draw "${2:-2034}" --cases 24 --no-traces --budget-s "${STEPS_S:-130}" > "$RUN/steps_test.log" 2>&1
fi
tail -3 "$RUN"/*.log
(cd /tmp && tar czf comm_run.tar.gz comm_run && split -b 15M comm_run.tar.gz "$OUT/comm_run.tar.gz.part-")
ls -la "$OUT"
