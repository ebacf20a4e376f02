#!/usr/bin/env bash
# Prepare, on a machine that reaches the default index (PyPI), what bench/h200_symbols.sh needs on the GPU machine
# (no network), under .device-carry/h200-symbols/ (ignored by git; the `carry` of the device run names it):
#   wheels/   tritonlock's dependencies the H200 image lacks (tomlkit, pyelftools, uv, truststore, isal, zstandard);
#             tritonlock itself runs from the checkout (PYTHONPATH)
#   symbad/   symbad 1.0: an extension module of torch's C++ API built for torch 2.9, naming no torch — it calls
#             c10::MessageLogger::MessageLogger(char const*, int, int), which torch 2.9.1 exports and 2.11.0 does not
#             (read from PyPI's wheels); compiled here with gcc against a stub libc10.so (the stable C API of Python,
#             abi3, so the H200's Python 3.12 imports it)
#   index/    the pages and METADATA (PEP 658) of torch 2.11.0's closure on the default index (Python 3.12, Linux
#             x86_64), and symbad's wheel: what bench/h200_symbols_index.py serves there
#   cache/    the binary facts of those wheels and the METADATA the integrity check keeps, kept by a resolve run
#             here against the same pages (their files read from the default index by ranged reads): on the H200 no
#             wheel is read, and torch 2.11.0's exports come from compat/torch-symbols/ (its sha256 is PyPI's)
# Run from the repository root in an environment where this checkout's dependencies are installed:
#   bash bench/h200_symbols_prepare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
C=.device-carry/h200-symbols
PY=${PYTHON:-python3}
SYMBOL=_ZN3c1013MessageLoggerC1EPKcii
rm -rf "$C"
mkdir -p "$C/wheels" "$C/symbad" "$C/index" "$C/cache" "$C/proj"
PLAT=(--only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --platform manylinux_2_28_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64)

# 1. what tritonlock needs that the image lacks (the image has click, packaging, requests, rich, nvidia-ml-py)
"$PY" -m pip download -q --no-deps "${PLAT[@]}" --abi abi3 --abi none -d "$C/wheels" \
  tomlkit pyelftools uv truststore isal zstandard

# 2. symbad: c10's symbol of torch 2.9 (by address: the loader must find it; nothing calls it)
"$PY" - "$C/symbad" "$SYMBOL" <<'PYEOF'
import subprocess, sys, sysconfig
from pathlib import Path
sys.path.insert(0, "tests")
from pkgindex import build_wheel
out, sym = Path(sys.argv[1]), sys.argv[2]
b = out / "build"
b.mkdir(parents=True)
(b / "c10.c").write_text(f"int {sym}(void) {{ return 0; }}\n")
subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-soname,libc10.so", "-o", str(b / "libc10.so"), str(b / "c10.c")], check=True)
(b / "_C.c").write_text(
    "#define Py_LIMITED_API 0x03080000\n#include <Python.h>\n"
    f"extern int {sym}(void);\n__attribute__((used)) static void *const need[] = {{(void *)&{sym}}};\n"
    "static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, \"symbad._C\", NULL, -1, NULL};\n"
    "PyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&def); }\n")
subprocess.run(["cc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o", str(b / "_C.abi3.so"),
                str(b / "_C.c"), f"-L{b}", "-l:libc10.so", "-Wl,--no-as-needed"], check=True)
whl = build_wheel(out, "symbad", "1.0", tag="cp38-abi3-manylinux_2_17_x86_64", modules={
    "symbad/__init__.py": "from symbad import _C\n", "symbad/_C.abi3.so": (b / "_C.abi3.so").read_bytes()})
print("symbad:", whl)
PYEOF
WHL=$(ls "$C"/symbad/symbad-1.0-*.whl)

# 3. torch 2.11.0's closure for Python 3.12 on Linux x86_64, as uv resolves it on the default index
REQS=$(echo "torch==2.11.0" | "$PY" -m uv pip compile - --python-version 3.12 --python-platform x86_64-manylinux_2_28 \
       --no-header --no-annotate --quiet | grep -E '^[A-Za-z0-9]' | tr '\n' ' ')
echo "closure: $REQS"
"$PY" bench/h200_symbols_index.py build "$C/index" $REQS --local "$WHL"

# 4. the resolve here, against the same pages (files from the default index): it keeps the facts the H200 reads
"$PY" bench/h200_symbols_index.py serve "$C/index" "$C/port" --upstream &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
for _ in $(seq 50); do [ -s "$C/port" ] && break; sleep 0.1; done
cat > "$C/proj/triton-env.toml" <<TOML
# symbad (built for torch 2.9's C++ API, naming no torch) beside torch 2.11.0
[environment]
python = "3.12"
torch = "==2.11.0"
packages = ["symbad"]

[indexes]
torch = "default"
default = "http://127.0.0.1:$(cat "$C/port")/simple"
TOML
set +e
TRITONLOCK_NATIVE_CACHE=$PWD/$C/cache "$PY" -m tritonlock resolve -p "$C/proj" --target-file bench/h200/h200.toml \
  > "$C/prepare-resolve.txt" 2>&1
echo "resolve here: exit $? (3 expected: symbad's symbol)"; set -e
grep -E "MessageLogger|fix:" "$C/prepare-resolve.txt" | head -4
rm -f "$C/proj/triton-env.toml" "$C/proj/triton-env.lock" "$C/port"
du -sh "$C"/* "$C"
