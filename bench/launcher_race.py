"""Triton's launcher loads from threads, bare and guarded (issue 41's false failure, "function takes exactly 39
arguments (43 given)"): two launchers built by Triton's own compile_module_from_src, each a C extension module named
__triton_launcher, loaded again and again from 8 threads; prints whether a second load shares the last one's module
object and how many loads came back with the other launcher's `launch`.
    python bench/launcher_race.py tritonlock/verify/runner {bare|guard}    (needs triton and a C compiler)
"""
import json, sys, threading
sys.path.insert(0, sys.argv[1])
from triton.runtime import build
from tlverify import precompile as P

SRC = """#include <Python.h>
static PyObject* launch(PyObject* self, PyObject* args) { return PyLong_FromLong(%d); }
static PyMethodDef M[] = {{"launch", launch, METH_VARARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "__triton_launcher", NULL, -1, M};
PyMODINIT_FUNC PyInit___triton_launcher(void) { return PyModule_Create(&D); }
"""
guarded = ""
if sys.argv[2] == "guard":
    guarded = P.guard_launcher_loads()
    P.guard_launcher_loads()  # a second call wraps nothing twice
load = lambda n: build.compile_module_from_src(SRC % n, "__triton_launcher")
one = load(1)
two = load(2)
again = load(1)  # the first file, loaded a second time
out = {"guarded": guarded, "one": one.launch(), "two": two.launch(), "again": again.launch(),
       "shared": again is two, "left": "__triton_launcher" in sys.modules}
sys.setswitchinterval(1e-6)
wrong = []
def worker(n):
    for _ in range(300):
        got = load(n).launch()
        if got != n:
            wrong.append((n, got))
ts = [threading.Thread(target=worker, args=(1 + i % 2,)) for i in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
out["wrong"] = len(wrong)
print(json.dumps(out))
