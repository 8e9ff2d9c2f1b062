#!/bin/bash
# replays audited (run from /tmp/audit/ws)
P=/work/main/.venv/bin/python
run() { echo "### $*"; timeout 300 $P -m fattorus.sweep "$@" progress=false 2>&1 | grep -E "done:|rror|Traceback" ; }
run +topo=cab policy=to sched=easy workload.window_days=10 seed=1
run +topo=cab policy=tree_bestfit sched=easy workload.window_days=10 seed=1
run +topo=cab policy=ta sched=fcfs workload.window_days=10 seed=1
run +topo=cab policy=ta sched=easy workload.window_days=15 +speedup=x10 seed=0
run +topo=cab policy=ta sched=easy workload.window_days=15 +speedup=v1 seed=3
run +topo=pinot policy=ta sched=easy workload.window_days=10 +speedup=v2 seed=2
run +topo=pinot policy=to sched=easy workload.window_days=10 seed=2
run +topo=pinot policy=tree_bestfit sched=easy workload.window_days=10 seed=2
run +topo=cab policy=ta sched=easy workload=thunder workload.window_days=10 workload.window_start_days=20 seed=4
run +topo=pinot policy=ta sched=easy workload.window_days=15 workload.window_start_days=60 +speedup=v2 seed=5
