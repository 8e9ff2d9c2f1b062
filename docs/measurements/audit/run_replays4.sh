#!/bin/bash
P=/work/main/.venv/bin/python
run() { echo "### $*"; timeout 300 $P -m fattorus.sweep "$@" progress=false 2>&1 | grep -E "done:|rror|Traceback" ; }
run +topo=cab policy=to sched=easy workload=thunder workload.window_days=10 workload.window_start_days=20 seed=1
run +topo=cab policy=to sched=easy seed=0
run +topo=pinot policy=tree_bestfit sched=easy workload=thunder workload.window_days=10 workload.window_start_days=20 seed=1
run +topo=cab policy=ta sched=fcfs workload=thunder workload.window_days=10 workload.window_start_days=20 seed=1
run +topo=cab policy=ta_tuned_atlas2x_cab sched=easy workload.window_days=15 +speedup=v2 seed=1
run +topo=edison policy=compact sched=easy workload=thunder workload.scale=20 workload.window_days=5 seed=1
run +topo=edison policy=random_group sched=easy workload=thunder workload.scale=20 workload.window_days=5 seed=1
