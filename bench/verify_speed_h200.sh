#!/usr/bin/env bash
# warm-run profile of verify's runner on the preinstalled stack
PY=/opt/torch/.venv/bin/python
R=$PWD/tritonlock/verify/runner
A='{"backend": "cu130", "triton": "3.6.0", "ptxas_floors": {"12": "525.60.13", "13": "580.65.06"}, "quick": QUICK}'
cd /tmp
for q in false true; do
  /usr/bin/time -f "cold quick=$q %e s" $PY -I $R --json-args "${A/QUICK/$q}" > /tmp/cold-$q.json 2>/tmp/cold-$q.err; tail -1 /tmp/cold-$q.err
  /usr/bin/time -f "warm quick=$q %e s" $PY -I $R --json-args "${A/QUICK/$q}" > /tmp/warm-$q.json 2>/tmp/warm-$q.err; tail -1 /tmp/warm-$q.err
done
/usr/bin/time -f "bare import torch %e s" $PY -c "import torch" 2>&1 | tail -1
/usr/bin/time -f "import torch+cuda init %e s" $PY -c "import torch; torch.zeros(1, device='cuda')" 2>&1 | tail -1
for q in true false; do
TRITONLOCK_VERIFY_COMPILE_THREADS=1 $PY -c "
import cProfile, pstats, runpy, sys, io
sys.argv = ['runner', '--json-args', '''${A/QUICK/$q}''']
sys.path.insert(0, '$R')
pr = cProfile.Profile(); pr.enable()
try:
    runpy.run_path('$R', run_name='__main__')
except SystemExit:
    pass
pr.disable()
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats('cumulative').print_stats(45); print(s.getvalue(), file=sys.stderr)
s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats('tottime').print_stats(25); print(s.getvalue(), file=sys.stderr)
" > /dev/null 2> $OUT/prof-quick-$q.txt
done
python3 - <<'PY'
import json
for n in ("warm-false", "warm-true"):
    d = json.load(open(f"/tmp/{n}.json"))
    print(n, [x for x in d.get("notes", []) if x.startswith(("time:", "compile:", "first"))])
PY
