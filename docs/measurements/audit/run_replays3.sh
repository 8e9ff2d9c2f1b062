#!/bin/bash
P=/work/main/.venv/bin/python
run() { echo "### $*"; timeout 300 $P -m fattorus.sweep "$@" progress=false 2>&1 | grep -E "done:|rror|Traceback" ; }
run +topo=torus8 policy=first_fit sched=easy workload=thunder workload.scale=2 workload.window_days=7 seed=1
run +topo=torus8 policy=feature sched=easy workload=thunder workload.scale=2 workload.window_days=7 seed=1
run +topo=torus8 policy=prism sched=easy workload=thunder workload.scale=2 workload.window_days=7 seed=1
run +topo=dragonfly_small policy=compact sched=easy workload=thunder workload.window_days=5 seed=1
run +topo=dragonfly_small policy=random_group sched=easy workload=thunder workload.window_days=5 seed=1
run +topo=edison policy=compact sched=easy workload=thunder workload.window_days=5 seed=1
run +topo=edison policy=random_group sched=easy workload=thunder workload.window_days=5 seed=2
run +topo=bluewaters policy=first_fit sched=easy workload=thunder workload.window_days=3 seed=1
run +topo=bluewaters policy=prism sched=easy workload=thunder workload.window_days=3 seed=1
run +topo=cab policy=to sched=fcfs workload=thunder workload.window_days=5 seed=1
run +topo=pinot policy=to_random sched=easy workload=thunder workload.window_days=5 seed=7
