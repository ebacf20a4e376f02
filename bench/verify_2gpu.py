"""Issue 44's measurements on a GPU machine, with the environment's own python (torch + triton; the verify runner
needs nothing else): the warm runner on CUDA_VISIBLE_DEVICES=0 against every GPU, interleaved, ROUNDS rounds (wall
time of each, its phases, the all-reduce's row); then the all-reduce's bus bandwidth over a few message sizes (one
spawned process per GPU, NCCL, busbw as nccl-tests defines it); then, with 2+ GPUs, one run with the last GPU kept busy
(bench/gpu_busy.py). Every runner report is kept under OUT for `_parse` on the CPU box (the band's verdict).

    python3 bench/verify_2gpu.py OUT [ROUNDS]
"""

import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "..", "tritonlock", "verify", "runner")
OUT = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
os.makedirs(OUT, exist_ok=True)


def runner(name: str, visible: str | None) -> float:
    env = dict(os.environ)
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-I", RUNNER], env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    with open(os.path.join(OUT, f"{name}.json"), "w") as f:
        f.write(proc.stdout)
    with open(os.path.join(OUT, f"{name}.err"), "w") as f:
        f.write(proc.stderr)
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        print(f"{name}: no report (exit {proc.returncode}); see {name}.err", flush=True)
        return took
    ar = [k for k in doc["kernels"] if k["kernel"].endswith("all_reduce")]
    times = next((n for n in doc["notes"] if n.startswith("time: ")), "")
    print(f"{name}: {took:.2f} s, ok={doc['ok']}, gpus={len(doc['gpus'])}; all-reduce: "
          + (f"{ar[0]['ok']} {ar[0]['value']} GB/s setup {ar[0].get('setup_seconds')} s overlapped "
             f"{ar[0].get('setup_overlapped')}; {ar[0]['detail'][:160]}" if ar else
             "; ".join(n for n in doc["notes"] if "all-reduce" in n)), flush=True)
    print(f"   {times}", flush=True)
    return took


def sweep_worker(rank: int, world: int, init: str, out: str) -> None:
    import datetime

    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=init, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120), device_id=torch.device("cuda", rank))
    rows = []
    for mib in (8, 32, 128, 256, 1024):
        x = torch.ones(mib << 18, device=f"cuda:{rank}")
        for _ in range(3):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        iters = 20
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        sec = (time.perf_counter() - t0) / iters
        rows.append({"mib": mib, "us": sec * 1e6, "algbw": (mib << 20) / sec / 1e9,
                     "busbw": (mib << 20) / sec / 1e9 * 2 * (world - 1) / world})
    dist.destroy_process_group()
    if rank == 0:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)


def main() -> None:
    import torch

    n = torch.cuda.device_count()
    print(f"{n} GPU(s); NCCL_NVLS_ENABLE={os.environ.get('NCCL_NVLS_ENABLE')}", flush=True)
    runner("warm-fill", None)  # fills the venv's Triton and Inductor caches
    one, all_ = [], []
    for i in range(1, ROUNDS + 1):
        one.append(runner(f"one-{i}", "0"))
        all_.append(runner(f"all-{i}", None))
    m1, m2 = statistics.median(one), statistics.median(all_)
    print(f"warm runner, median of {ROUNDS}: 1 GPU {m1:.2f} s, {n} GPU(s) {m2:.2f} s: the other GPU(s) add "
          f"{m2 - m1:+.2f} s (rounds: 1 GPU {', '.join(f'{t:.2f}' for t in one)}; all "
          f"{', '.join(f'{t:.2f}' for t in all_)})", flush=True)
    if n < 2:
        print("one GPU: no all-reduce sweep and no busy-peer run", flush=True)
        return
    import tempfile

    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(OUT, "sweep.json")
        mp.start_processes(sweep_worker, args=(n, "file://" + os.path.join(tmp, "rdzv"), out), nprocs=n,
                           start_method="spawn")
    for row in json.load(open(out)):
        print(f"all-reduce {row['mib']:5d} MiB: {row['us']:9.1f} us, algbw {row['algbw']:7.1f} GB/s, busbw "
              f"{row['busbw']:7.1f} GB/s", flush=True)
    marker = os.path.join(OUT, "busy.marker")
    busy = subprocess.Popen([sys.executable, os.path.join(HERE, "gpu_busy.py"), marker, str(n - 1)])
    try:
        deadline = time.time() + 120
        while not os.path.exists(marker) and time.time() < deadline and busy.poll() is None:
            time.sleep(0.2)
        runner("busy-last-gpu", None)
    finally:
        busy.kill()
        busy.wait()


if __name__ == "__main__":
    main()
