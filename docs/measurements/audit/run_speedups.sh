#!/bin/bash
P=/work/main/.venv/bin/python
run() { echo "### $*"; timeout 300 $P -m fattorus.sweep "$@" progress=false 2>&1 | grep -E "done:|rror|Traceback" ; }
for s in 0 1 2 3; do
run +topo=cab policy=ta workload=thunder workload.window_days=10 workload.window_start_days=20 +speedup=v1 seed=$s
run +topo=cab policy=ta workload=thunder workload.window_days=10 workload.window_start_days=20 +speedup=v2 seed=$s
done
run +topo=pinot policy=ta workload=thunder workload.window_days=10 +speedup=x20 seed=0
run +topo=cab policy=tree_bestfit workload=thunder workload.window_days=10 +speedup=x5 seed=0
