"""Real shared objects for the native-code tests, compiled here with the system C compiler: stub CUDA runtime and
torch libraries (each with its real soname), Python extension modules that link them (so DT_NEEDED and the
undefined symbols are the linker's), and a `.nv_fatbin` section of CUDA fatbin container headers added with objcopy
(the layout tritonlock/lock/gpucode.py reads, as nvcc writes it). Importing such an extension is a real import:
a library the loader cannot find, or a symbol a library lacks, fails as it does for a user."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sysconfig
from pathlib import Path

import pytest

CC = shutil.which("cc") or shutil.which("gcc")
OBJCOPY = shutil.which("objcopy")


def need_tools() -> None:
    if CC is None or OBJCOPY is None:
        pytest.skip("a C compiler and objcopy are needed (apt-get install gcc binutils)")


def stub_library(out_dir: Path, soname: str, symbols: tuple[str, ...] = ("stub_version",)) -> Path:
    """A shared library named and sonamed `soname` that defines `symbols` (C functions; a C++ name is given
    mangled, "_ZN3c1010TensorImpl7releaseEv", which is a valid C identifier)."""
    need_tools()
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / f"{soname}.c"
    src.write_text("".join(f"int {s}(void) {{ return 0; }}\n" for s in symbols), encoding="utf-8")
    out = out_dir / soname
    subprocess.run([CC, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(out), str(src)], check=True,
                   capture_output=True)
    return out


def extension(out_dir: Path, module: str, *, links: dict[Path, tuple[str, ...]], rpath: str = "$ORIGIN",
              fatbin: tuple[tuple[int, ...], ...] = (), strings: tuple[str, ...] = (),
              weak: tuple[str, ...] = (), refs: tuple[str, ...] = ()) -> bytes:
    """A Python extension module `module` (PyInit_<last part>) that links each library in `links` (found at its
    path when built; at `rpath` when imported) and calls the symbols given for it; `fatbin`: (kind, arch) entries of
    a `.nv_fatbin` section (kind 2: a cubin, 1: PTX; arch 80 for sm_80); `strings`: C strings in its read-only data
    (a library name it would dlopen); `weak`: symbols it references weakly (nothing need define them); `refs`:
    symbols it needs without calling them (a real C++ function: its address is taken, the loader must find it)."""
    need_tools()
    out_dir.mkdir(parents=True, exist_ok=True)
    base = module.rsplit(".", 1)[-1]
    calls = [s for syms in links.values() for s in syms]
    src = out_dir / f"{base}.c"
    src.write_text(
        "#include <Python.h>\n" + "".join(f"extern int {s}(void);\n" for s in calls)
        + "".join(f"extern int {s}(void) __attribute__((weak));\n" for s in weak)
        + "".join(f"extern int {s}(void);\n" for s in refs)
        + (("__attribute__((used)) static void *const tl_refs[] = {"
            + ", ".join(f"(void *)&{s}" for s in refs) + "};\n") if refs else "")
        + (("__attribute__((used)) static const char *const tl_strings[] = {"
            + ", ".join('"' + x + '"' for x in strings) + "};\n") if strings else "")
        + f"static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, \"{module}\", NULL, -1, NULL}};\n"
        + f"PyMODINIT_FUNC PyInit_{base}(void) {{\n"
        + "".join(f"  (void){s}();\n" for s in calls)
        + "".join(f"  if ({s}) (void){s}();\n" for s in weak)
        + "  return PyModule_Create(&def);\n}\n", encoding="utf-8")
    out = out_dir / f"{base}.so"
    args = [CC, "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", "-o", str(out), str(src),
            f"-Wl,-rpath,{rpath}", "-Wl,--no-as-needed"]
    for lib in links:
        args += [f"-L{lib.parent}", f"-l:{lib.name}"]
    subprocess.run(args, check=True, capture_output=True)
    if fatbin:
        section = out_dir / f"{base}.fatbin"
        section.write_bytes(fatbin_bytes(fatbin))
        subprocess.run([OBJCOPY, "--add-section", f".nv_fatbin={section}", str(out)], check=True,
                       capture_output=True)
    return out.read_bytes()


def library(out_dir: Path, soname: str, *, links: dict[Path, tuple[str, ...]], rpath: str = "$ORIGIN") -> bytes:
    """A shared library that is no Python module (no PyInit_), named and sonamed `soname`, that links each library in
    `links` and calls the symbols given for it: what a package loads itself at run time (onnxruntime's providers)."""
    need_tools()
    out_dir.mkdir(parents=True, exist_ok=True)
    calls = [s for syms in links.values() for s in syms]
    src = out_dir / f"{soname}.c"
    src.write_text("".join(f"extern int {s}(void);\n" for s in calls)
                   + "int tl_provider_start(void) {\n" + "".join(f"  (void){s}();\n" for s in calls)
                   + "  return 0;\n}\n", encoding="utf-8")
    out = out_dir / soname
    args = [CC, "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", str(out), str(src), f"-Wl,-rpath,{rpath}",
            "-Wl,--no-as-needed"]
    for lib in links:
        args += [f"-L{lib.parent}", f"-l:{lib.name}"]
    subprocess.run(args, check=True, capture_output=True)
    return out.read_bytes()


def fatbin_bytes(entries: tuple[tuple[int, ...], ...]) -> bytes:
    """One fatbin container: u32 magic 0xBA55ED50, u16 version, u16 header size (16), u64 size of the entries; each
    entry a 64-byte header (u16 kind, u16 version, u32 header size, u64 payload size, …, u32 arch at +28, u64 flags at
    +40: 0x100000 for arch-specific code, sm_90a) and an 8-byte payload; an entry is (kind, arch) or (kind, arch,
    flags)."""
    body = b""
    for kind, arch, *flags in entries:
        head = bytearray(64)
        struct.pack_into("<HHIQ", head, 0, kind, 0x0101, 64, 8)
        struct.pack_into("<I", head, 28, arch)
        struct.pack_into("<Q", head, 40, flags[0] if flags else 0)
        body += bytes(head) + b"\0" * 8
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body
