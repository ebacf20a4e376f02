"""Print compat/triton.toml [[ptxas]] rows read from the wheels themselves (HTTP Range reads, no full download).

    python tools/ptxas_facts.py triton 3.9.0,3.8.0 linux_x86_64,linux_aarch64
    python tools/ptxas_facts.py triton-windows 3.8.0.post29 win_amd64

For each wheel: the CUDA release of bin/ptxas and bin/ptxas-blackwell (their "Cuda compilation tools, release
X.Y, VX.Y.Z" string), from which compute capability compiler.py's get_ptxas picks ptxas-blackwell, and the
variable that overrides it. `tritonlock compat check --wheels all` re-reads the same facts and compares.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tritonlock.lock.index import IndexClient as Index  # noqa: E402
from tritonlock.maintain.wheels import ptxas_wheel, read_wheel_ptxas  # noqa: E402
from tritonlock.lock.index import default_index  # noqa: E402


def main(argv: list[str]) -> int:
    package, versions, platforms = argv[0], argv[1].split(","), argv[2].split(",")
    index = Index(default_index())
    files = index.files(package)
    for version in versions:
        for platform in platforms:
            f = ptxas_wheel(files, package, version, platform)
            if f is None:
                print(f"# {package} {version}: no {platform} wheel", file=sys.stderr)
                continue
            got = read_wheel_ptxas(index.session, f)
            what = "; ".join(x for x in (
                f"bin/ptxas V{got.ptxas}",
                f"bin/ptxas-blackwell V{got.blackwell} for compute capability >= {got.blackwell_from}"
                if got.blackwell else "",
            ) if x)
            lines = ["[[ptxas]]", f'package = "{package}"', f'version = "{version}"', f'platform = "{platform}"',
                     f'ptxas = "{got.ptxas}"']
            if got.blackwell:
                lines += [f'blackwell = "{got.blackwell}"', f'blackwell_from = "{got.blackwell_from}"',
                          f'blackwell_env = "{got.blackwell_env}"']
            lines.append(f'source = "{got.url}#sha256={got.sha256} ({what}; compiler.py get_ptxas)"')
            print("\n".join(lines) + "\n", flush=True)
            print(f"# {package} {version} {platform}: read {got.read_bytes / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
