#!/bin/bash
P=/work/main/.venv/bin/python
run() { echo "### $*"; timeout 300 $P -m fattorus.sweep "$@" progress=false 2>&1 | grep -E "done:|rror|Traceback|x[0-9.]+|fit" ; }
run +topo=torus8 policy=first_fit sched=easy workload.window_days=10 seed=1
run +topo=torus8 policy=feature sched=easy workload.window_days=10 seed=1
run +topo=torus8 policy=prism sched=easy workload.window_days=10 seed=1
run +topo=bluewaters policy=first_fit sched=easy workload.window_days=5 seed=1
run +topo=bluewaters policy=prism sched=easy workload.window_days=5 seed=1
run +topo=dragonfly_small policy=compact sched=easy workload.window_days=10 seed=1
run +topo=dragonfly_small policy=random_group sched=easy workload.window_days=10 seed=1
run +topo=edison policy=compact sched=easy workload.window_days=5 seed=1
run +topo=edison policy=random_group sched=easy workload.window_days=5 seed=1
