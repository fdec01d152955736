#!/usr/bin/env bash
# One device call on a machine with several GPUs of one host: collectives and parallel training steps over each GPU
# count in COUNTS (default: every GPU), packed into <= 15 MiB parts under $OUT.
#   MODE=fit  COUNTS="4 8" bash benchmarks/comm/run_gpus.sh                # the grids (collectives, misaligned, steps)
#   MODE=test COUNTS="4 8" bash benchmarks/comm/run_gpus.sh 2038 2039       # frozen test draws, after a freeze commit
# Budgets per count (seconds): COMM_S, MIS_S, STEPS_S, TRACE_S. NVLink multicast stays off (the device README).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
ALL=$(nvidia-smi -L 2>/dev/null | wc -l)
COUNTS=${COUNTS:-$ALL}
RUN=/tmp/comm_run; rm -rf "$RUN"; mkdir -p "$RUN"
nvidia-smi topo -m > "$RUN/topo.txt" 2>&1; nvidia-smi nvlink -s > "$RUN/nvlink.txt" 2>&1
for N in $COUNTS; do
  LAUNCH="python3 -m torch.distributed.run --standalone --nproc_per_node=$N"
  if [ "${MODE:-fit}" = fit ]; then
    $LAUNCH benchmarks/comm/collectives.py --out "$RUN/comm_n$N" --grid --budget-s "${COMM_S:-140}" > "$RUN/comm_n$N.log" 2>&1
    $LAUNCH benchmarks/comm/collectives.py --out "$RUN/comm_mis_n$N" --misaligned --budget-s "${MIS_S:-60}" > "$RUN/comm_mis_n$N.log" 2>&1
    $LAUNCH benchmarks/comm/parallel_steps.py --out "$RUN/steps_n$N" --budget-s "${STEPS_S:-150}" --trace-budget-s "${TRACE_S:-30}" > "$RUN/steps_n$N.log" 2>&1
  else  # the frozen test: random draws only
    $LAUNCH benchmarks/comm/collectives.py --out "$RUN/comm_test_n$N" --draw "${1:-2038}" --cases 120 --budget-s "${COMM_S:-80}" > "$RUN/comm_test_n$N.log" 2>&1
    $LAUNCH benchmarks/comm/parallel_steps.py --out "$RUN/steps_test_n$N" --draw "${2:-2039}" --cases 24 --no-traces --budget-s "${STEPS_S:-130}" > "$RUN/steps_test_n$N.log" 2>&1
  fi
done
for f in "$RUN"/*.log; do echo "== $f"; tail -n 2 "$f"; done
(cd /tmp && tar czf comm_run.tar.gz comm_run && split -b 15M comm_run.tar.gz "$OUT/comm_run.tar.gz.part-")
ls -la "$OUT"
