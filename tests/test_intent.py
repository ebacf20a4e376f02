"""triton-env.toml validation: good files parse; every bad one gives file:line, the key and a fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tritonlock.errors import IntentError
from tritonlock.intent.read import parse_intent, read_intent, starter


def _err(text: str) -> str:
    with pytest.raises(IntentError) as ei:
        parse_intent(text, "t.toml")
    return str(ei.value)


def test_full_intent_parses() -> None:
    it = parse_intent("""
[environment]
python = "3.12"
torch = ">=2.6"
triton = "auto"
packages = ["numpy>=1.26", "einops"]
cuda = "auto"
cuda-policy = "strict"

[indexes]
torch = "https://mirror.example/whl/{backend}/"
default = "https://mirror.example/simple"

[[targets]]
name = "a100-cluster"
os = "linux"
arch = "x86_64"
glibc = "2.31"
python = "3.10"
driver = "535.104.05"
gpus = ["8.0", "8.0"]
""", "t.toml")
    assert it.python == "3.12" and it.torch == ">=2.6" and it.cuda_policy == "strict"
    assert it.packages == ("numpy>=1.26", "einops")  # the order the user wrote: uv decides the packages in it
    assert it.torch_index == "https://mirror.example/whl/{backend}"
    (t,) = it.targets
    assert (t.name, t.os, t.arch, t.glibc, t.python, t.driver, t.gpus) == (
        "a100-cluster", "linux", "x86_64", "2.31", "3.10", "535.104.05", ("8.0", "8.0"))
    assert it.content_hash.startswith("sha256:") and len(it.content_hash) == 71


def test_defaults_and_shorthands() -> None:
    it = parse_intent("[environment]\ntorch = '2.6'\ncuda = '12.4'\n")
    assert (it.python, it.torch, it.triton, it.cuda, it.cuda_policy, it.targets) == (
        None, "==2.6.*", "auto", "==12.4", "compatible", ())
    assert parse_intent("").torch == ""
    assert parse_intent("[environment]\ntorch='*'\narch='AMD64'\n".replace("arch='AMD64'\n", "")).torch == ""
    assert parse_intent("[[targets]]\nname='w'\narch='AMD64'\nos='Win32'\n").targets[0].os == "windows"


def test_hash_ignores_comments_and_key_order_but_not_the_packages_order() -> None:
    a = parse_intent("[environment]\ntorch='>=2.6'\npackages=['a','b']\n").content_hash
    b = parse_intent("# hi\n[environment]\npackages=['a','b']  # x\ntorch='>=2.6'\n").content_hash
    c = parse_intent("[environment]\ntorch='>=2.7'\npackages=['a','b']\n").content_hash
    # the packages' order decides which one wins a tie (the earlier): another order is another decision
    d = parse_intent("[environment]\ntorch='>=2.6'\npackages=['b','a']\n").content_hash
    assert a == b != c and d not in (a, c)


@pytest.mark.parametrize("text, expected", [
    ("[environment]\ntorch = 2.6\n",
     "t.toml:2: environment.torch: expected a string, got float 2.6 — write e.g. \">=2.6\""),
    ("[environment]\ntorch = '>=2.6.x'\n",
     "t.toml:2: environment.torch: '>=2.6.x' is not a valid PEP 440 version specifier — write e.g. \">=2.6\" or \"==2.7.1\""),
    ("[environment]\nfoo = 1\n",
     "t.toml:2: environment.foo: unknown key — use one of: python, torch, triton, packages, cuda, cuda-policy, no-build"),
    ("[environment]\npackages = ['numpy >>= 1']\n",
     "t.toml:2: environment.packages[0]: 'numpy >>= 1' is not a valid requirement"),
    ("[environment]\ncuda = 'cuda12'\n",
     "t.toml:2: environment.cuda: 'cuda12' is not a valid PEP 440 version specifier — write e.g. \"auto\", \"cpu\", \"cu126\" or \">=12.4\""),
    ("[environment]\ncuda-policy = 'loose'\n",
     "t.toml:2: environment.cuda-policy: unknown policy 'loose' — use \"compatible\" or \"strict\""),
    ("[environment]\npackages = ['torch>=2']\n",
     "t.toml:2: environment.packages[0]: torch is not listed as a package: tritonlock locks it itself, in the range "
     "[environment].torch gives — remove it here and write torch = \">=2\" in [environment]"),
    ("[environment]\npackages = ['numpy', 'torch']\n",
     "t.toml:2: environment.packages[1]: torch is not listed as a package: tritonlock locks it itself, in the range "
     "[environment].torch gives — remove it here and write torch = \"*\" in [environment]"),
    ("[environment]\npackages = ['triton==3.6.0; sys_platform == \"linux\"']\n",
     "t.toml:2: environment.packages[0]: triton is not listed as a package: tritonlock locks it itself, in the range "
     "[environment].triton gives — remove it here and write triton = \"*\" in [environment]"),
    ("[environment]\ntorch = '>=2.6'\npackages = ['Torch<3']\n",
     "t.toml:3: environment.packages[0]: Torch is set by [environment].torch — remove it here ([environment].torch "
     "is its range)"),
    ("[indexes]\ntorch = 'mirror/whl'\n",
     "t.toml:2: indexes.torch: 'mirror/whl' is not an http(s):// or file:// URL — give the index's full address"),
    ("[[targets]]\nos = 'linux'\n", "t.toml:1: targets[0]: missing required key 'name' — add name = \"my-cluster\""),
    ("[[targets]]\nname = 'a'\n\n[[targets]]\nname = 'b'\ndriver = 'new'\n",
     "t.toml:6: targets[1].driver: 'new' is not an NVIDIA driver version"),
    ("[[targets]]\nname = 'a'\ngpus = '8.0'\ndriver = '535.1'\n",
     "t.toml:3: targets[0].gpus: expected a list of strings, got '8.0' — write e.g. [\"8.0\", \"8.0\"] or [\"A100\"]"),
    ("[[targets]]\nname = 'a'\ngpus = ['8.0']\n",
     "t.toml:1: targets[0].driver: gpus are listed but no driver is given"),
    ("[[targets]]\nname = 'a'\narch = 'riscv'\n", "t.toml:3: targets[0].arch: unknown arch 'riscv' — use x86_64 or aarch64"),
    ("[[targets]]\nname = 'host'\n", "t.toml:2: targets[0].name: the name 'host' is reserved"),
    ("[environment]\ntorch = '>=2.6'\n[environment\n",
     "t.toml:3: TOML syntax error:"),
    ("[environment]\ntorch = '>=2.6\n", "t.toml:2: TOML syntax error:"),
    ("wat = 1\n", "t.toml:1: wat: unknown key — use one of: environment, indexes, targets"),
])
def test_bad_intent_names_file_line_key_and_fix(text: str, expected: str) -> None:
    msg = _err(text)
    assert msg.startswith(expected), msg
    assert "\n" not in msg  # one problem, one line


def test_every_problem_is_reported_at_once() -> None:
    msg = _err("[environment]\ntorch = 1\npython = 3\n[[targets]]\nname = 'x'\nos = 'beos'\n")
    assert msg.splitlines()[0] == "3 problems in t.toml:"
    assert "t.toml:2: environment.torch" in msg and "t.toml:3: environment.python" in msg
    assert "t.toml:6: targets[0].os: unknown os 'beos'" in msg


def test_gpu_names_map_to_compute_capability() -> None:
    it = parse_intent("[[targets]]\nname='c'\ndriver='550.54.15'\ngpus=['A100', 'NVIDIA GeForce RTX 4090']\n")
    assert it.targets[0].gpus == ("8.0", "8.9")
    assert "unknown GPU 'Voodoo 5'" in _err("[[targets]]\nname='c'\ndriver='550.54.15'\ngpus=['Voodoo 5']\n")


def test_missing_file_and_starter(tmp_path: Path) -> None:
    with pytest.raises(IntentError, match="no such file — run `tritonlock init`"):
        read_intent(tmp_path / "triton-env.toml")
    it = parse_intent(starter("3.11", "# host"), "s.toml")
    assert it.python == "3.11" and it.torch == ">=2.6"


def test_a_local_version_label_names_the_backend() -> None:
    it = parse_intent('[environment]\ntorch = "==2.13.0+cpu"\n')
    assert (it.torch, it.cuda) == ("==2.13.0", "cpu")
    it = parse_intent('[environment]\ntorch = "2.13.0+cu126"\ncuda = "cu126"\n')  # as pip freeze prints it, minus ==
    assert (it.torch, it.cuda) == ("==2.13.0", "cu126")
    # the same intent as writing both keys: the lock does not go stale over the spelling
    assert it.content_hash == parse_intent('[environment]\ntorch = "==2.13.0"\ncuda = "cu126"\n').content_hash
    with pytest.raises(IntentError) as err:
        parse_intent('[environment]\ntorch = "==2.13.0+cu126"\ncuda = "cpu"\n')
    assert str(err.value) == ("triton-env.toml:3: environment.cuda: 'cpu' contradicts torch = '==2.13.0+cu126', whose "
                              '+cu126 names the cu126 backend — remove one of them (e.g. cuda = "cu126")')


def test_an_unknown_backend_is_bad_input_listing_the_known_ones() -> None:
    with pytest.raises(IntentError) as err:
        parse_intent('[environment]\ncuda = "cu999"\n')
    msg = str(err.value)
    assert msg.startswith("triton-env.toml:2: environment.cuda: unknown backend 'cu999' — use one of: auto, cpu, cu117, ")
    assert "cu126" in msg and "cu132" in msg and msg.endswith('or a CUDA specifier like ">=12.4"')
    with pytest.raises(IntentError, match=r"unknown backend 'cu999' in the local version label"):
        parse_intent('[environment]\ntorch = "==2.13.0+cu999"\n')


def test_latest_is_not_a_specifier_and_the_error_says_star() -> None:
    with pytest.raises(IntentError) as err:
        parse_intent('[environment]\ntorch = "latest"\n')
    assert str(err.value) == ("triton-env.toml:2: environment.torch: 'latest' is not a version specifier — write \"*\" "
                              'for the newest torch that fits (or e.g. ">=2.6"), or leave the key out')
    with pytest.raises(IntentError, match=r'write "auto" for the triton the chosen torch pins'):
        parse_intent('[environment]\ntriton = "latest"\n')
    assert parse_intent('[environment]\ntorch = "*"\ntriton = "*"\n').torch == ""


def test_target_files_never_reach_out_of_the_project_through_a_symlink(tmp_path: Path) -> None:
    """`..` and absolute patterns were refused, but a link inside hosts/ (or hosts/ itself a link) pulled in an
    outside file — which `export --format k8s` then shipped in its ConfigMap."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.toml").write_text('[[targets]]\nname = "x"\nos = "linux"\narch = "x86_64"\n')
    proj = tmp_path / "proj"
    (proj / "hosts").mkdir(parents=True)
    (proj / "triton-env.toml").write_text('target-files = ["hosts/*.toml", "linked/*.toml"]\n')
    (proj / "hosts" / "x.toml").symlink_to(outside / "x.toml")
    (proj / "linked").symlink_to(outside)
    with pytest.raises(IntentError) as ei:
        read_intent(proj / "triton-env.toml")
    for f in ("hosts/x.toml", "linked/x.toml"):
        assert (f"{proj / f}: a symlink to {outside / 'x.toml'}, outside the project ({proj}) — target files must be "
                "inside the project: copy the file in instead of linking it") in str(ei.value)
    # a link that stays inside the project is fine
    (proj / "hosts" / "x.toml").unlink()
    (proj / "linked").unlink()
    (proj / "shared").mkdir()
    (proj / "shared" / "x.toml").write_text((outside / "x.toml").read_text())
    (proj / "hosts" / "x.toml").symlink_to(proj / "shared" / "x.toml")
    (proj / "triton-env.toml").write_text('target-files = ["hosts/*.toml"]\n')
    assert [t.name for t in read_intent(proj / "triton-env.toml").targets] == ["x"]


def test_what_a_newcomer_writes_reads_as_meant() -> None:
    """torch = "2.5" was accepted but "2.5.*" refused; cuda = "12" refused; torch = "" read as any torch."""
    assert parse_intent('[environment]\ntorch = "2.5.*"\n').torch == parse_intent('[environment]\ntorch = "2.5"\n').torch \
        == "==2.5.*"
    assert parse_intent('[environment]\ntorch = "2.*"\n').torch == "==2.*"
    assert parse_intent('[environment]\ncuda = "12"\n').cuda == "==12.*"
    assert parse_intent('[environment]\ncuda = "12.*"\n').cuda == "==12.*"
    assert parse_intent('[environment]\ncuda = "12.6.*"\n').cuda == "==12.6.*"
    for key, fix in (("torch", 'write "*" for the newest torch that fits'), ("triton", 'write "auto" for the triton')):
        with pytest.raises(IntentError) as err:
            parse_intent(f'[environment]\n{key} = ""\n')
        assert str(err.value).startswith(f"triton-env.toml:2: environment.{key}: '' is not a ") and fix in str(err.value)


def test_a_bare_driver_branch_reads_as_its_first_release_and_says_so() -> None:
    """driver = "535" compared as 535.0 — older than every R535 driver — and showed CUDA 12.1; R535 is CUDA 12.2
    (535.54.03, NVIDIA's Table 3)."""
    from tritonlock.compat.matrix import load_matrix

    it = parse_intent('[[targets]]\nname = "a"\ndriver = "535"\ngpus = ["8.0"]\n')
    assert it.targets[0].driver == "535.54.03"
    assert load_matrix().max_cuda_for_driver(it.targets[0].driver) == "12.2"
    assert it.warnings == ("triton-env.toml: targets[0].driver = '535' is a branch: read as 535.54.03, the first R535 "
                           "release (CUDA 12.2) — write the full version nvidia-smi shows to lock for your exact driver",)
    with pytest.raises(IntentError, match=r"targets\[0\].driver: '565' is a driver branch, not a driver version, and "
                                          r"no CUDA toolkit shipped with R565 — write the full version"):
        parse_intent('[[targets]]\nname = "a"\ndriver = "565"\n')
    assert parse_intent('[[targets]]\nname = "a"\ndriver = "535.104.05"\n').warnings == ()


def test_an_unknown_gpu_name_suggests_the_nearest_known_one() -> None:
    """"RTX4090" said 'give its compute capability instead, e.g. "8.6"' — a 4090 is 8.9, and "RTX 4090" is known."""
    with pytest.raises(IntentError) as err:
        parse_intent('[[targets]]\nname = "a"\ndriver = "550.54.15"\ngpus = ["RTX4090", "A10O", "Quux 9"]\n')
    text = str(err.value)
    assert ("gpus[0]: unknown GPU 'RTX4090' — did you mean \"RTX 4090\" (compute capability 8.9)? Write that, or its "
            'compute capability "8.9"') in text
    assert 'gpus[1]: unknown GPU \'A10O\' — did you mean "A100" (compute capability 8.0)?' in text
    assert "gpus[2]: unknown GPU 'Quux 9' — give its compute capability instead (nvidia-smi" in text
    assert '"8.6"' not in text


ENV_KEYS = "python, torch, triton, packages, cuda, cuda-policy, no-build, channel, optional-gpu-code, allow-unchecked-native, imports"
TARGET_KEYS = "name, os, arch, glibc, python, driver, cuda, gpus, macos, amdgpu, hsa-override"
TOP_KEYS = "environment, indexes, targets, target-files, package-builds"


@pytest.mark.parametrize(("text", "expected"), [
    ('[environment]\ntorhc = ">=2.6"\n',
     f't.toml:2: environment.torhc: unknown key — did you mean "torch"? (the keys here: {ENV_KEYS})'),
    ('[environment]\ncuda_policy = "strict"\n',
     f't.toml:2: environment.cuda_policy: unknown key — did you mean "cuda-policy"? (the keys here: {ENV_KEYS})'),
    ('[environment]\nPackages = []\n',
     f't.toml:2: environment.Packages: unknown key — did you mean "packages"? (the keys here: {ENV_KEYS})'),
    ('[environment]\ndriver = "535"\n',
     f"t.toml:2: environment.driver: unknown key — driver belongs in [[targets]]: move it there (the keys here: "
     f"{ENV_KEYS})"),
    ('[environment]\ngpu = ["8.0"]\n',
     f't.toml:2: environment.gpu: unknown key — did you mean "gpus"? It belongs in [[targets]]: move it there (the '
     f"keys here: {ENV_KEYS})"),
    ('[environment]\nindex = "https://mirror.example/simple"\n',  # a [[package-builds]] key: no hint from there
     f"t.toml:2: environment.index: unknown key — use one of: {ENV_KEYS}"),
    ("enviroment = 1\n", f't.toml:1: enviroment: unknown key — did you mean "environment"? (the keys here: {TOP_KEYS})'),
    ('torch = ">=2.6"\n',
     f"t.toml:1: torch: unknown key — torch belongs in [environment]: move it there (the keys here: {TOP_KEYS})"),
    ('target-file = ["hosts/*.toml"]\n',
     f't.toml:1: target-file: unknown key — did you mean "target-files"? (the keys here: {TOP_KEYS})'),
    ('[indexes]\ndefualt = "https://mirror.example/simple"\n',
     't.toml:2: indexes.defualt: unknown key — did you mean "default"? (the keys here: torch, default)'),
    ('[[targets]]\nname = "a"\ngpu = ["8.0"]\n',
     f't.toml:3: targets[0].gpu: unknown key — did you mean "gpus"? (the keys here: {TARGET_KEYS})'),
    ('[[targets]]\nname = "a"\npackges = ["x"]\n',
     f't.toml:3: targets[0].packges: unknown key — did you mean "packages"? It belongs in [environment]: move it '
     f"there (the keys here: {TARGET_KEYS})"),
    ('[[package-builds]]\nname = "vllm"\nindex = "https://w.example/{version}/{cuda}"\ncuda = ["cu129"]\nfromat = 1\n',
     't.toml:5: package-builds[0].fromat: unknown key — did you mean "format"? (the keys here: name, index, cuda, '
     'format)'),
])
def test_a_misspelt_key_in_each_table_gets_the_key_it_most_likely_means(text: str, expected: str) -> None:
    assert _err(text) == expected


def test_a_misspelt_key_in_a_target_file_and_a_pyproject_gets_its_suggestion(tmp_path: Path) -> None:
    (tmp_path / "hosts").mkdir()
    (tmp_path / "hosts" / "a.toml").write_text('[[target]]\nname = "a"\n')
    (tmp_path / "triton-env.toml").write_text('target-files = ["hosts/*.toml"]\n')
    with pytest.raises(IntentError) as err:
        read_intent(tmp_path / "triton-env.toml")
    assert (f'{tmp_path / "hosts" / "a.toml"}:1: target: unknown key — did you mean "targets"? (the keys here: '
            "targets)") in str(err.value)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n[project.optional-dependencies]\ntrain = []\n[tool.tritonlock]\nextra = ["train"]\n'
        '[tool.tritonlock.environment]\ndriver = "535"\n')
    with pytest.raises(IntentError) as err:
        read_intent(tmp_path / "pyproject.toml")
    where = tmp_path / "pyproject.toml"
    assert str(err.value).splitlines()[1:] == [
        f'  {where}:6: tool.tritonlock.extra: unknown key — did you mean "extras"? (the keys here: {TOP_KEYS}, '
        'extras)',
        f"  {where}:8: tool.tritonlock.environment.driver: unknown key — driver belongs in "
        f"[[tool.tritonlock.targets]]: move it there (the keys here: {ENV_KEYS})"]


def test_suggestions_stop_where_the_error_stops_listing() -> None:
    """A fuzzy match per key costs time: like unknown GPU names, only the keys an error shows get one."""
    msg = _err("[environment]\n" + "".join(f"k{i} = 1\n" for i in range(20)) + "torhc = 1\n")
    assert msg.splitlines()[-1] == "  … and 1 more"
    assert 'did you mean "torch"' not in msg
    msg = _err("[environment]\n" + "".join(f"k{i} = 1\n" for i in range(19)) + "torhc = 1\n")
    assert msg.splitlines()[-1].endswith('environment.torhc: unknown key — did you mean "torch"? (the keys here: '
                                         f"{ENV_KEYS})")


_BUILDS = '''[environment]
python = "3.11"

[[package-builds]]
name = "my kernels"
index = "https://wheels.example/{version}/{cudaa}"
cuda = ["cu128", "12.8"]
format = "zip"

[[package-builds]]
name = "vllm"
index = "ftp://wheels.example/{version}/{cuda}"
cuda = []

[[package-builds]]
name = "VLLM"
index = "https://u:S3@CR/ET@wheels.example/{version}/{0}"

[[package-builds]]
index = 3
cuda = ["cu128"]
'''


def test_package_builds_name_each_bad_key() -> None:
    """[[package-builds]]: a name that is no package name (or a second table for one), a placeholder other than
    {version}, {cuda} and {torch} (which failed only when a build was looked up), an address that is not http(s)://
    or file://, variants that are not cuXYZ, an unknown format: each named by its key and line, all at once, no
    secret shown."""
    err = _err(_BUILDS)
    fix = ('e.g. name = "vllm", index = "https://wheels.vllm.ai/{version}/{cuda}", cuda = ["cu129"]')
    assert err.startswith("11 problems in t.toml:\n"), err
    for line in (
            f"t.toml:5: package-builds[0].name: 'my kernels' is not a package name — write the package's name, {fix}",
            "t.toml:6: package-builds[0].index: 'https://wheels.example/{version}/{cudaa}' has a brace that is not "
            "{version}, {cuda} or {torch} — write the address of the package's own index with {version}, {cuda} or "
            f"{{torch}}, {fix}",
            "t.toml:7: package-builds[0].cuda: expected a list of the variants the index publishes, got ['cu128', "
            "'12.8'] — write them as PyTorch names its builds, e.g. cuda = [\"cu128\", \"cu130\"]",
            "t.toml:8: package-builds[0].format: 'zip' is not a format — use \"simple\" (an index) or \"flat\"",
            "t.toml:12: package-builds[1].index: 'ftp://wheels.example/{version}/{cuda}' is not an http(s):// or "
            "file:// URL",
            "t.toml:13: package-builds[1].cuda: expected a list of the variants the index publishes, got []",
            "t.toml:16: package-builds[2].name: 'VLLM' has a [[package-builds]] table above already — keep one table "
            "per package",
            "t.toml:17: package-builds[2].index: 'https://***@wheels.example/{version}/{0}' has a brace that is not",
            "t.toml:15: package-builds[2].cuda: missing",
            "t.toml:19: package-builds[3].name: missing",
            "t.toml:20: package-builds[3].index: expected an index address, got 3"):
        assert "\n  " + line in err, (line, err)
    assert "S3" not in err and "CR/ET" not in err


def test_package_builds_credentials_stay_in_memory() -> None:
    """A token written in a [[package-builds]] index is used for its requests, never carried on: the intent (and so
    the lock and its hash) keeps the address without it, percent-encoding or not."""
    from tritonlock import _urls
    from tritonlock.lock import index

    _urls.forget()
    try:
        it = parse_intent('[[package-builds]]\nname = "kp"\nindex = "https://u:T0K/EN@w.example/{version}/{cuda}"\n'
                          'cuda = ["cu128"]\nformat = "flat"\n', "t.toml")
        (b,) = it.package_builds
        assert (b.name, b.index, b.cuda, b.flat) == ("kp", "https://w.example/{version}/{cuda}", ("cu128",), True)
        assert index.credentials("https://w.example/1.0/cu128/kp/") == ("u", "T0K/EN")
    finally:
        _urls.forget()


@pytest.mark.parametrize("name", ["triton-env.toml", "pyproject.toml"])
def test_learn_credentials_reads_every_index_url_of_the_intent_and_nothing_else(tmp_path: Path, name: str) -> None:
    """What sync learns from an intent it does not parse (the lock is fresh): the credentials in [indexes] and in
    [[package-builds]] indexes — and none from elsewhere in the file (a comment, a requirement's URL)."""
    from tritonlock import _urls
    from tritonlock.intent.read import learn_credentials
    from tritonlock.lock import index

    pre = "tool.tritonlock." if name == "pyproject.toml" else ""
    body = ('[project]\nname = "p"\ndependencies = ["a @ https://r:REQ@y.example/a-1-py3-none-any.whl"]\n'
            if pre else '[environment]\npackages = ["a @ https://r:REQ@y.example/a-1-py3-none-any.whl"]\n')
    body += (f'# default = "https://c:COMMENT@x.example/simple"\n[{pre}indexes]\n'
             'torch = "https://t:T0K@h.example/whl/{backend}"\ndefault = "https://d:D3F@h.example/simple"\n'
             f'[[{pre}package-builds]]\nname = "kp"\nindex = "https://b:B1D@w.example/{{version}}/{{cuda}}"\n'
             'cuda = ["cu128"]\n')
    (tmp_path / name).write_text(body)
    _urls.forget()
    try:
        learn_credentials(tmp_path / name)
        assert index.credentials("https://h.example/whl/cu128/torch/") == ("t", "T0K")
        assert index.credentials("https://h.example/simple/einops/") == ("d", "D3F")
        assert index.credentials("https://w.example/1.0/cu128/kp/") == ("b", "B1D")
        assert index.credentials("https://x.example/simple/") is None and index.credentials("https://y.example/a") is None
    finally:
        _urls.forget()
def test_imports_names_the_modules_the_user_imports_beside_their_packages_own() -> None:
    """[environment].imports: top-level module names (a dotted name counts for its first part), sorted, each bad
    entry an error naming its index; it goes into the intent's hash only when set."""
    it = parse_intent("[environment]\npackages = ['nixl-cu12']\nimports = ['nixl_ep_cu12', 'deep_gemm.jit', "
                      "'nixl_ep_cu12']\n")
    assert it.imports == ("deep_gemm", "nixl_ep_cu12")
    plain = parse_intent("[environment]\npackages = ['nixl-cu12']\n")
    assert plain.imports == () and plain.content_hash != it.content_hash
    assert parse_intent("[environment]\npackages = ['nixl-cu12']\nimports = []\n").content_hash == plain.content_hash
    for bad, what in (("'nixl_ep'", "expected a list of module names, got 'nixl_ep'"),
                      ("['nixl-ep']", "environment.imports[0]: 'nixl-ep' is not a module name"),
                      ("['a', 3]", "environment.imports[1]: 3 is not a module name"),
                      ("['é_mod']", "environment.imports[0]: 'é_mod' is not a module name"),
                      ("['a..b']", "environment.imports[0]: 'a..b' is not a module name")):
        msg = _err(f"[environment]\nimports = {bad}\n")
        assert what in msg and 'imports = ["nixl_ep_cu12"]' in msg, msg
