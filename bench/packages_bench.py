"""`tritonlock resolve` for a project with 30 direct packages against `uv pip compile` of the same requirements,
side by side on your default index (PyPI or your mirror): the packages-first decision's cost as a ratio.

Usage: python bench/packages_bench.py [--repeat N]     (needs the network: your default index)

Both tools resolve for the same machine (Linux x86_64, glibc 2.35, Python 3.12) with hashes; uv's cache is warmed
by a first untimed run of each, so the ratio compares decisions, not downloads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# A training + inference stack a team would name: 30 direct packages, several of them bounding torch.
PACKAGES = [
    "transformers", "accelerate", "datasets", "peft", "trl", "bitsandbytes", "xformers", "einops", "sentencepiece",
    "safetensors", "tokenizers", "numpy", "scipy", "pandas", "tqdm", "tensorboard", "hydra-core", "omegaconf",
    "rich", "pyyaml", "pillow", "matplotlib", "scikit-learn", "torchmetrics", "lightning", "timm", "evaluate",
    "liger-kernel", "torchao", "wandb",
]


def timed(args: list[str], cwd: Path, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
        out.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from uv import find_uv_bin

    uv = str(find_uv_bin())
    tl = [sys.executable, "-m", "tritonlock"]
    with tempfile.TemporaryDirectory(prefix="tl-bench-pkgs-") as tmp:
        root = Path(tmp)
        (root / "triton-env.toml").write_text(
            '[environment]\npython = "3.12"\npackages = ' + json.dumps(PACKAGES) + '\n[indexes]\ntorch = "default"\n'
            '[[targets]]\nname = "h200"\ndriver = "580.95.05"\ngpus = ["9.0"]\nglibc = "2.35"\n', encoding="utf-8")
        (root / "requirements.in").write_text("\n".join(PACKAGES + ["torch"]) + "\n", encoding="utf-8")
        uv_cmd = [uv, "pip", "compile", "requirements.in", "--no-config", "--python-version", "3.12",
                  "--python-platform", "x86_64-manylinux_2_35", "--generate-hashes", "--quiet", "-o", "uv.txt"]
        tl_cmd = [*tl, "resolve", "--upgrade", "--json"]
        timed(uv_cmd, root, 1)  # warm uv's cache for both
        timed(tl_cmd, root, 1)
        uv_t, tl_t = [], []
        for _ in range(args.repeat):  # interleaved, so load on the machine hits both alike
            uv_t += timed(uv_cmd, root, 1)
            tl_t += timed(tl_cmd, root, 1)
        lock = json.loads(subprocess.run([*tl, "show", "--json"], cwd=root, capture_output=True, text=True,
                                         check=True).stdout)
        (t,) = lock["targets"]
        uv_pins = dict(line.split("==", 1) for line in (root / "uv.txt").read_text().splitlines()
                       if "==" in line and not line.startswith((" ", "#")))
        same = sum(1 for d in t.get("direct", []) if uv_pins.get(d["name"], "").split(" ")[0] == d["version"])
        u, w = statistics.median(uv_t), statistics.median(tl_t)
        print(f"30 direct packages, Python 3.12, linux x86_64 (warm caches, median of {args.repeat}):")
        print(f"  uv pip compile        {u:6.2f} s")
        print(f"  tritonlock resolve    {w:6.2f} s   ratio {w / u:.2f}x (budget 1.5x)")
        print(f"  torch: tritonlock {t['torch']}; direct packages at uv's version: {same} of {len(PACKAGES)}")
        held = [d for d in t.get("direct", []) if not d["at_newest"]]
        for d in held:
            print(f"  held back: {d['name']} {d['version']} (newest {d['newest']}): {d['held_by']}")


if __name__ == "__main__":
    main()
