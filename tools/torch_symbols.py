"""Write compat/torch-symbols/: what each torch build on the default index (PyPI's) exports of torch's C++ API, as a
Golomb-coded set of the names' hashes (tritonlock.native.torchsyms), read from the wheels themselves by HTTP Range
reads of the start of each torch/lib library (a few MB of each 0.5–1 GB wheel).

    python tools/torch_symbols.py 2.13.0,2.12.1 linux_x86_64,linux_aarch64            # print the rows, write the sets
    python tools/torch_symbols.py 2.13.0 linux_x86_64 --every-python                   # read each Python's wheel

The first wheel of a release and platform (cp312, else the first) is read; with --every-python each of the others
(one per Python tag) is read too and listed under the same set where it exports exactly the same names (else it is
left out, and said). Only wheels read are listed: another's sha256 gets its facts on the machine that needs them.
Size budget: 200 KiB per build, 4 MiB in all (checked here); false-match rate one in 2**bits (--bits, 20).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tritonlock.lock.index import IndexClient, default_index  # noqa: E402
from tritonlock.native import gcs, torchsyms  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "compat" / "torch-symbols"
PER_BUILD = 200 << 10
ALL = 4 << 20
_TAG = {"linux_x86_64": "manylinux_2_28_x86_64", "linux_aarch64": "manylinux_2_28_aarch64"}


def wheels(files: list, version: str, platform: str) -> list:
    plat = platform.split("_", 1)[1]
    out = [f for f in files if f.filename.startswith(f"torch-{version}-") and f.filename.endswith(f"{plat}.whl")
           and "manylinux" in f.filename and f.sha256]
    return sorted(out, key=lambda f: (0 if "-cp312-cp312-" in f.filename else 1, f.filename))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("versions")
    ap.add_argument("platforms")
    ap.add_argument("--bits", type=int, default=20)
    ap.add_argument("--every-python", action="store_true")
    a = ap.parse_args(argv)
    index = IndexClient(default_index())
    files = list(index.files("torch"))
    OUT.mkdir(parents=True, exist_ok=True)
    for version in a.versions.split(","):
        for platform in a.platforms.split(","):
            found = wheels(files, version, platform)
            if not found:
                print(f"# torch {version}: no {platform} wheel", file=sys.stderr)
                continue
            first = found[0]
            names = torchsyms.read_remote(first.url, first.size, index.session)
            checked = [first]
            if a.every_python:
                for f in found[1:]:
                    other = torchsyms.read_remote(f.url, f.size, index.session)
                    if other != names:
                        print(f"# torch {version} {platform}: {f.filename} exports other names than "
                              f"{first.filename} ({len(other ^ names)} differ): not listed", file=sys.stderr)
                        continue
                    checked.append(f)
            listed = checked  # (only the wheels read: another Python's wheel is read on the machine that needs it)
            data, n, modulus = gcs.gcs_encode({torchsyms.symbol_hash(x) for x in names}, a.bits)
            if len(data) > PER_BUILD:
                raise SystemExit(f"torch {version} {platform}: {len(data)} bytes, over the {PER_BUILD} budget")
            name = f"torch-{version}-{platform}.gcs"
            (OUT / name).write_bytes(data)
            how = "each wheel listed read, the same names" if len(listed) > 1 else "the one wheel listed"
            print("[[build]]")
            print(f'torch = "{version}"')
            print(f'platform = "{platform}"')
            print(f'file = "{name}"')
            print(f"symbols = {n}")
            print(f"modulus = {modulus}")
            print(f"bits = {a.bits}")
            print(f"bytes = {len(data)}")
            print("sha256 = [" + ", ".join(f'"{f.sha256}"' for f in listed) + "]")
            print("wheels = [" + ", ".join(f'"{f.filename}"' for f in listed) + "]")
            print(f'source = "the default index (PyPI) simple page of project torch: {first.filename} '
                  f'(sha256 {first.sha256}), the dynamic symbols of its torch/lib/libtorch*.so and libc10*.so ({how}); '
                  f'set sha256 {hashlib.sha256(data).hexdigest()}"\n', flush=True)
            print(f"# torch {version} {platform}: {n} names, {len(data)} bytes", file=sys.stderr)
    total = sum(p.stat().st_size for p in OUT.glob("*.gcs"))
    if total > ALL:
        raise SystemExit(f"compat/torch-symbols/ holds {total} bytes, over the {ALL} budget")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
