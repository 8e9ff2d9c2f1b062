#!/bin/bash
# Runs every checker on the audited runs; writes /tmp/audit/all_checks.txt and all_heuristics.txt
cd /tmp/audit/ws
RUNS=$(ls -d results/runs/* | grep -v -E "thunder-x2-v[12]-s(2[0-5]|3[0-2])-")
timeout 3000 /work/main/.venv/bin/python /tmp/audit/check_run.py $RUNS > /tmp/audit/all_checks.txt 2>&1
timeout 600 /work/main/.venv/bin/python /tmp/audit/check_heuristics.py $(ls -d results/runs/*cab-* results/runs/*pinot-* | grep -v tuned) > /tmp/audit/all_heuristics.txt 2>&1
