# 2026-11-28, a quiet machine (2 cores, nothing else running), one venv (torch 2.13.0 CPU).
# before: 269ca3b (before the #45 work), a git worktree at /work/runs/src; after: main at 61ecc81 (/work/main).
# overhead.log (04:05-04:13 UTC):
. /work/main/.venv/bin/activate
cd /work/bench45
for round in 1 2; do
  for side in before after; do
    if [ $side = before ]; then tree=/work/runs/src; else tree=/work/main; fi
    echo "=== round $round $side wrapper_overhead moving_dot ($(git -C $tree rev-parse --short HEAD))"
    PYTHONPATH=$tree python $tree/benchmarks/wrapper_overhead.py --envs moving_dot 2>&1 | grep -v Warning
    echo "=== round $round $side vector_overhead moving_dot"
    PYTHONPATH=$tree python $tree/benchmarks/vector_overhead.py --envs moving_dot --rounds 3 2>&1 | grep -v Warning
  done
done
for side in before after; do
  if [ $side = before ]; then tree=/work/runs/src; else tree=/work/main; fi
  echo "=== $side wrapper_overhead pong"
  PYTHONPATH=$tree python $tree/benchmarks/wrapper_overhead.py --envs pong 2>&1 | grep -v Warning
done
echo DONE

# overhead_vector.log (04:14-04:19 UTC), after first in each round:
. /work/main/.venv/bin/activate
cd /work/bench45
for round in 3 4 5; do
  for side in after before; do
    if [ $side = before ]; then tree=/work/runs/src; else tree=/work/main; fi
    echo "=== round $round $side vector_overhead moving_dot"
    PYTHONPATH=$tree python $tree/benchmarks/vector_overhead.py --envs moving_dot --rounds 3 2>&1 | grep -v Warning
  done
done
echo DONE
