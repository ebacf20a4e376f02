"""Read and validate triton-env.toml into an Intent; every problem names file:line and a fix."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from tritonlock import _toml, _urls
from tritonlock._intenthash import content_hash
from tritonlock._files import read_text
from tritonlock.errors import IntentError
from tritonlock.intent import _checks, pyproject
from tritonlock.intent import targets as intent_targets
from tritonlock.intent._checks import INTENT_LIMIT, normalize_torch_spec
from tritonlock.intent.targets import same_machines
from tritonlock.models import Intent, PackageBuilds, TargetSpec

_ENV_KEYS = _checks.TABLES["[environment]"]
_INDEX_KEYS = _checks.TABLES["[indexes]"]
_BACKEND = re.compile(r"^(cpu|cu[0-9]{3,})\Z")


def _cuda(p: _checks._Problems, raw: Any) -> str:
    s = _checks._string(p, ("environment", "cuda"), raw, '"auto", "cpu", "cu126" or ">=12.4"')
    if s is None:
        return "auto"
    s = s.strip().lower()
    if s == "cpu" or (_BACKEND.match(s) and s in _known_backends()):
        return s
    if s == "auto":
        return s
    if _BACKEND.match(s):
        p.add(("environment", "cuda"), f"unknown backend {s!r}",
              f"use one of: auto, {', '.join(_known_backends())}, or a CUDA specifier like \">=12.4\"")
        return "auto"
    if re.fullmatch(r"[0-9]+\.[0-9]+", s):
        return f"=={s}"
    if re.fullmatch(r"[0-9]+(\.\*)?", s):  # a CUDA major: "12" (or "12.*") is any CUDA 12.x build
        return f"=={s.removesuffix('.*')}.*"
    if re.fullmatch(r"[0-9]+\.[0-9]+\.\*", s):
        return f"=={s}"
    if _checks._check_spec(p, ("environment", "cuda"), s, '"auto", "cpu", "cu126" or ">=12.4"'):
        return s
    return "auto"


def _known_backends() -> list[str]:
    """The CUDA/CPU backends of PyTorch's index the matrix knows (compat/ is local data), oldest CUDA first."""
    from tritonlock.compat.matrix import load_matrix

    seen = {v.backend for r in load_matrix().torch for v in r.variants if v.backend == "cpu" or v.backend.startswith("cu")}
    return sorted(seen, key=lambda b: (b != "cpu", int(b[2:]) if b[2:].isdigit() else 0))


def _torch(p: _checks._Problems, raw: Any) -> tuple[str, str | None]:
    """(specifier, backend from a local label): "==2.13.0+cpu", as pip freeze prints it, is 2.13.0 on cpu."""
    t = _checks._string(p, ("environment", "torch"), raw, '">=2.6"')
    if t is None:
        return "", None
    if t.strip().lower() in ("latest", "newest", "any", "all", ""):
        p.add(("environment", "torch"), f"{t.strip()!r} is not a version specifier",
              'write "*" for the newest torch that fits (or e.g. ">=2.6"), or leave the key out')
        return "", None
    m = _checks._LOCAL.fullmatch(t)
    if m:
        label = m.group(2).lower()
        if label not in _known_backends():
            p.add(("environment", "torch"), f"{t.strip()!r}: unknown backend {label!r} in the local version label",
                  f"use one of: {', '.join(_known_backends())} (or drop the +label and set cuda)")
            return "", None
        return f"=={m.group(1)}", label
    torch = normalize_torch_spec(t)
    if not _checks._check_spec(p, ("environment", "torch"), torch, '">=2.6" or "==2.7.1"'):
        return "", None
    return torch, None


def _index(p: _checks._Problems, key: tuple[str | int, ...], raw: Any) -> str | None:
    s = _checks._string(p, key, raw, '"https://mirror.example/whl/{backend}"')
    if s is None:
        return None
    torch = key == ("indexes", "torch")
    if s == "default" and torch:
        return s  # the torch family from the default index: PyPI's (or your mirror's) builds
    fix = "give the index's full address" + (', or "default" to take torch from the default index' if torch else "")
    s = _urls.normalize(s)  # a password written as it is ("S3@CR/ET", "{x}"): percent-encoded, the host the real one
    # {backend} is the one placeholder a torch index may carry; any other brace (outside a password) is a typo.
    rest = s.replace("{backend}", "cu126") if torch else s
    if "{" in rest or "}" in rest:
        p.add(key, f"{_urls.redact(_toml.shown(s, 120))} has a brace that is not {{backend}}" if torch else
              f"{_urls.redact(_toml.shown(s, 120))} has a {{ or }} (a placeholder only [indexes].torch may use, as "
              "{backend})", "write the address with {backend} where the backend goes, and no other braces"
              if torch else fix)
        return None
    why = _urls.problem(rest)
    if why is not None:
        p.add(key, f"{_urls.redact(_toml.shown(s, 120))} {why}", fix)
        return None
    # user:token@ stays in memory for requests (uv and the index client get it at request time); what the
    # intent carries on — into the lock, the output and the intent's hash — is the address without it.
    _urls.learn(s)
    return _urls.strip_credentials(s).rstrip("/")


def parse_intent(text: str, path: str = "triton-env.toml", *, target_files: bool = True) -> Intent:
    """Validate the text of an intent file; raises IntentError listing every problem. `target_files=False`: see
    read_intent."""
    p = _checks._Problems(path, text)
    try:
        data = _toml.loads(text)
    except _toml.TOMLDecodeError as err:
        line, msg = _toml.decode_error_line(err, text)
        where = f"{path}:{line}" if line else path
        raise IntentError(f"{where}: TOML syntax error: {msg} — fix the syntax (https://toml.io)") from None
    if Path(path).name == "pyproject.toml":  # [tool.tritonlock] + [project].dependencies: the same intent
        data = pyproject._from_pyproject(p, data)
    top = ("environment", "indexes", "targets", "target-files", "package-builds")
    _checks._unknown(p, data, (*top, "extras") if p.prefix else top, (),  # ([tool.tritonlock] has extras too)
                     {k: t for k, t in _checks.elsewhere("").items() if t != "[[package-builds]]"})
    env = data.get("environment", {})
    if not isinstance(env, dict):
        p.add(("environment",), "expected a table", "write it as [environment]")
        env = {}
    _checks._unknown(p, env, _ENV_KEYS, ("environment",), _checks.elsewhere("[environment]"))
    python = _checks._python(p, ("environment", "python"), env["python"]) if "python" in env else None
    torch = ""
    label: str | None = None
    if "torch" in env:
        torch, label = _torch(p, env["torch"])
    triton = "auto"
    if "triton" in env:
        t = _checks._string(p, ("environment", "triton"), env["triton"], '"auto", "none" or ">=3.2"')
        if t is not None:
            triton = t.strip()
            if triton.lower() in ("latest", "newest", "any"):
                p.add(("environment", "triton"), f"{triton!r} is not a triton choice",
                      'write "auto" for the triton the chosen torch pins (or a specifier like ">=3.2", or "none")')
                triton = "auto"
            elif not triton:
                p.add(("environment", "triton"), "'' is not a triton choice",
                      'write "auto" for the triton the chosen torch pins (or a specifier like ">=3.2", or "none"), '
                      "or leave the key out")
                triton = "auto"
            elif triton not in ("auto", "none"):
                triton = normalize_torch_spec(triton)
                if not _checks._check_spec(p, ("environment", "triton"), triton, '"auto", "none" or ">=3.2"'):
                    triton = "auto"
    packages: list[str] = []
    raw_pk = env.get("packages", [])
    if not isinstance(raw_pk, list):
        p.add(("environment", "packages"), f"expected a list of requirement strings, got {_toml.shown(raw_pk)}",
              'write e.g. packages = ["numpy>=1.26"]')
        raw_pk = []
    for i, req in enumerate(raw_pk):
        if not isinstance(req, str):
            p.add(("environment", "packages", i), f"expected a string, got {_toml.shown(req)}", 'write e.g. "numpy>=1.26"')
            continue
        parsed = _checks._requirement(req)
        if isinstance(parsed, str):
            p.add(("environment", "packages", i), f"{_toml.shown(req)} is not a valid requirement ({parsed})",
                  'write e.g. "numpy>=1.26"')
            continue
        name, text = parsed
        url_problem = _checks._requirement_url_problem(text)
        if url_problem:
            p.add(("environment", "packages", i), f"{_urls.redact(_toml.shown(req, 120))}: {url_problem}",
                  _checks.URL_FIX)
            continue
        if name.lower() in ("torch", "triton"):  # (tritonlock locks them itself, from their own keys)
            key = name.lower()
            rest = text[len(name):].split("]", 1)[-1] if text[len(name):].startswith("[") else text[len(name):]
            given = "" if any(c in rest for c in ";@ ") else rest
            if key in env:
                p.add(("environment", "packages", i), f"{name} is set by [environment].{key}",
                      f"remove it here ([environment].{key} is its range)")
            else:
                p.add(("environment", "packages", i), f"{name} is not listed as a package: tritonlock locks it "
                      f"itself, in the range [environment].{key} gives", f"remove it here and write {key} = "
                      f"\"{given or '*'}\" in [environment]")
            continue
        packages.append(text)
    cuda = _cuda(p, env["cuda"]) if "cuda" in env else "auto"
    if label is not None:  # torch = "==2.13.0+cu126" names the backend itself
        if "cuda" in env and cuda not in ("auto", label):
            p.add(("environment", "cuda"), f"{cuda!r} contradicts torch = {env['torch']!r}, whose +{label} names the "
                  f"{label} backend", f'remove one of them (e.g. cuda = "{label}")')
        else:
            cuda = label
    policy = "compatible"
    if "cuda-policy" in env:
        pol = _checks._string(p, ("environment", "cuda-policy"), env["cuda-policy"], '"compatible" or "strict"')
        if pol is not None and pol not in ("compatible", "strict"):
            p.add(("environment", "cuda-policy"), f"unknown policy {_toml.shown(pol)}", 'use "compatible" or "strict"')
        elif pol is not None:
            policy = pol
    no_build = _no_build(p, env["no-build"]) if "no-build" in env else ()
    optional_gpu = _names(p, ("environment", "optional-gpu-code"), env["optional-gpu-code"],
                          'write a list of package names, e.g. optional-gpu-code = ["torchao"]') \
        if "optional-gpu-code" in env else ()
    unchecked = _allow_unchecked(p, env["allow-unchecked-native"]) if "allow-unchecked-native" in env else False
    imports = _import_names(p, env["imports"]) if "imports" in env else ()
    channel = "release"
    if "channel" in env:  # PyTorch's nightly or test builds (compat/channels.toml)
        ch = _checks._string(p, ("environment", "channel"), env["channel"], '"release", "nightly" or "test"')
        if ch is not None and ch not in ("release", "nightly", "test"):
            p.add(("environment", "channel"), f"unknown channel {_toml.shown(ch)}", 'use "release", "nightly" or "test"')
        elif ch is not None:
            channel = ch
    idx = data.get("indexes", {})
    if not isinstance(idx, dict):
        p.add(("indexes",), "expected a table", "write it as [indexes]")
        idx = {}
    _checks._unknown(p, idx, _INDEX_KEYS, ("indexes",), _checks.elsewhere("[indexes]"))
    torch_index = _index(p, ("indexes", "torch"), idx["torch"]) if "torch" in idx else None
    default_index = _index(p, ("indexes", "default"), idx["default"]) if "default" in idx else None
    raw_targets = data.get("targets", [])
    targets: list[TargetSpec] = []
    if not isinstance(raw_targets, list):
        p.add(("targets",), "expected an array of tables", "write each target as a [[targets]] table")
        raw_targets = []
    names: set[str] = set()
    for i, raw in enumerate(raw_targets):
        spec = intent_targets._target(p, i, raw, names)
        if spec is not None:
            targets.append(spec)
    globs, files = intent_targets._target_files(p, data, Path(path).parent, names, targets) if target_files \
        else ((), ())
    package_builds = _package_builds(p, data.get("package-builds", [])) if "package-builds" in data else ()
    p.raise_if_any()
    # the order the user wrote the packages in is theirs: uv decides them in it, and ties favour the earlier one
    intent = Intent(path=path, python=python, torch=torch, triton=triton, packages=tuple(dict.fromkeys(packages)),
                    cuda=cuda, cuda_policy=policy, torch_index=torch_index, default_index=default_index,
                    targets=tuple(targets), no_build=no_build, content_hash="", target_files=globs,
                    warnings=tuple(p.warnings) + same_machines(targets), channel=channel,
                    package_builds=package_builds, optional_gpu_code=optional_gpu,
                    allow_unchecked_native=unchecked, imports=imports)
    del files  # (the files are the targets' origins, in order: content_hash reads them from there)
    return dataclasses.replace(intent, content_hash=content_hash(intent, intent.targets))


_BUILD_KEYS = _checks.TABLES["[[package-builds]]"]
_BUILD_FIELDS = ("version", "cuda", "torch")  # what an index address of [[package-builds]] may carry in braces
_BUILD_EXAMPLE = 'e.g. name = "vllm", index = "https://wheels.vllm.ai/{version}/{cuda}", cuda = ["cu129"]'


def _package_builds(p: _checks._Problems, raw: Any) -> tuple[PackageBuilds, ...]:
    """[[package-builds]]: a package's own per-CUDA builds on an index of its own, as compat/packages.toml rows
    (name, index with {version}/{cuda}/{torch}, cuda = ["cu128", ...], format = "simple" | "flat"). Each key is
    checked here, naming it: a name that is no package name, an index with another placeholder (which would fail
    only when a build is looked up), an address that is not http(s):// or file://, a variant that is not cuXYZ."""
    from tritonlock.compat.pkgbuilds import parse_rows

    if not isinstance(raw, list):
        p.add(("package-builds",), "expected an array of tables", "write each as a [[package-builds]] table")
        return ()
    out: list[PackageBuilds] = []
    names: set[str] = set()
    for i, row in enumerate(raw):
        key: tuple[str | int, ...] = ("package-builds", i)
        if not isinstance(row, dict):
            p.add(key, "expected a table", "write it as a [[package-builds]] table")
            continue
        _checks._unknown(p, row, _BUILD_KEYS, key, _checks.elsewhere("[[package-builds]]"))
        before = len(p.items)
        name, index, cuda, fmt = row.get("name"), row.get("index"), row.get("cuda"), row.get("format", "simple")
        if not isinstance(name, str) or not _urls.NAME.match(name.strip()):
            p.add((*key, "name"), "missing" if name is None else f"{_toml.shown(name)} is not a package name",
                  f"write the package's name, {_BUILD_EXAMPLE}")
        elif re.sub(r"[-_.]+", "-", name.strip()).lower() in names:
            p.add((*key, "name"), f"{_toml.shown(name)} has a [[package-builds]] table above already",
                  "keep one table per package")
        else:
            names.add(re.sub(r"[-_.]+", "-", name.strip()).lower())
        index = _build_index(p, (*key, "index"), index)
        if not isinstance(cuda, list) or not cuda or not all(isinstance(c, str) and re.fullmatch(r"cu[0-9]{3}|cpu", c)
                                                               for c in cuda):
            p.add((*key, "cuda"), "missing" if cuda is None else
                  f"expected a list of the variants the index publishes, got {_toml.shown(cuda)}",
                  'write them as PyTorch names its builds, e.g. cuda = ["cu128", "cu130"]')
        if fmt not in ("simple", "flat"):
            p.add((*key, "format"), f"{_toml.shown(fmt)} is not a format",
                  'use "simple" (an index) or "flat" (a page of links, pip\'s find-links)')
        if len(p.items) > before or index is None:
            continue
        try:
            (b,) = parse_rows([{**row, "name": str(name).strip(), "index": index}], "", "package-builds")
        except ValueError as err:  # (what the checks above let through, said as the shared reader says it)
            p.add(key, str(err).split(": ", 2)[-1], _BUILD_EXAMPLE)
            continue
        out.append(b)
    return tuple(out)


def _build_index(p: _checks._Problems, key: tuple[str | int, ...], raw: Any) -> str | None:
    """A [[package-builds]] index address: its placeholders only {version}, {cuda} and {torch}, an http(s):// or
    file:// URL once they are filled; credentials written in it kept in memory, the address returned without."""
    fix = f"write the address of the package's own index with {{version}}, {{cuda}} or {{torch}}, {_BUILD_EXAMPLE}"
    if raw is None:
        p.add(key, "missing", fix)
        return None
    if not isinstance(raw, str):
        p.add(key, f"expected an index address, got {_toml.shown(raw)}", fix)
        return None
    s = _urls.normalize(raw.strip())  # a password with a raw "@" or "{": percent-encoded, the host the real one
    filled = re.sub(r"\{(" + "|".join(_BUILD_FIELDS) + r")\}", "x", s)
    if "{" in filled or "}" in filled:
        p.add(key, f"{_urls.redact(_toml.shown(s, 120))} has a brace that is not {{version}}, {{cuda}} or {{torch}}",
              fix)
        return None
    why = _urls.problem(filled)
    if why is not None:
        p.add(key, f"{_urls.redact(_toml.shown(s, 120))} {why}", fix)
        return None
    _urls.learn(s)  # (as [indexes]: the lock, the output and the intent's hash get the address without them)
    return _urls.strip_credentials(s)


def _no_build(p: _checks._Problems, raw: Any) -> tuple[str, ...]:
    """[environment].no-build: true (no package is built from source) or a list of package names; (":all:",) for
    true, as pip and uv spell it, else the names normalized and sorted."""
    key: tuple[str | int, ...] = ("environment", "no-build")
    fix = 'write no-build = true (wheels only), or a list of package names, e.g. no-build = ["flash-attn"]'
    if isinstance(raw, bool):
        return (":all:",) if raw else ()
    if not isinstance(raw, list):
        p.add(key, f"expected true, false or a list of package names, got {_toml.shown(raw)}", fix)
        return ()
    return _names(p, key, raw, fix)


def _allow_unchecked(p: _checks._Problems, raw: Any) -> bool | tuple[str, ...]:
    """[environment].allow-unchecked-native: true (any package's wheel whose binary facts cannot be read is locked
    unchecked, the lock saying so), false (resolve fails instead: the default), or a list of the packages that may
    be."""
    if isinstance(raw, bool):
        return raw
    fix = ('write allow-unchecked-native = true (any package), or a list of package names, e.g. '
           'allow-unchecked-native = ["hostpkg"]')
    if not isinstance(raw, list):
        p.add(("environment", "allow-unchecked-native"), f"expected true, false or a list of package names, got "
              f"{_toml.shown(raw)}", fix)
        return False
    return _names(p, ("environment", "allow-unchecked-native"), raw, fix)
def _import_names(p: _checks._Problems, raw: Any) -> tuple[str, ...]:
    """[environment].imports: the top-level modules the user imports beside their packages' own (a second package a
    wheel ships, nixl-cu12's nixl_ep_cu12): Python identifiers, sorted; each entry that is none a problem."""
    key: tuple[str | int, ...] = ("environment", "imports")
    fix = 'write a list of the modules you import, e.g. imports = ["nixl_ep_cu12"]'
    if not isinstance(raw, list):
        p.add(key, f"expected a list of module names, got {_toml.shown(raw)}", fix)
        return ()
    out: list[str] = []
    for i, n in enumerate(raw):
        top = n.strip().split(".", 1)[0] if isinstance(n, str) else ""
        if not isinstance(n, str) or not all(part.isidentifier() and part.isascii() for part in n.strip().split(".")):
            p.add((*key, i), f"{_toml.shown(n)} is not a module name", fix)
            continue
        out.append(top)
    return tuple(sorted(set(out)))


def _names(p: _checks._Problems, key: tuple[str | int, ...], raw: Any, fix: str) -> tuple[str, ...]:
    """A list of package names, normalized and sorted; each entry that is none is a problem naming its index."""
    if not isinstance(raw, list):
        p.add(key, f"expected a list of package names, got {_toml.shown(raw)}", fix)
        return ()
    names: list[str] = []
    for i, n in enumerate(raw):
        if not isinstance(n, str) or not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?", n.strip()):
            p.add((*key, i), f"{_toml.shown(n)} is not a package name", fix)
            continue
        names.append(re.sub(r"[-_.]+", "-", n.strip()).lower())
    return tuple(sorted(set(names)))


def learn_credentials(path: str | Path) -> None:
    """Learn the credentials written in the intent's index URLs ([indexes], [[package-builds]] index) for this
    process's requests, without validating the rest: for a command that found the lock fresh and so never parsed
    the intent — `sync` installing from a private index needs them as much as the `resolve` that wrote the lock did.
    A file that cannot be read or parsed teaches nothing (the full read says what is wrong with it)."""
    try:
        text = read_text(Path(path), encoding="utf-8-sig", limit=INTENT_LIMIT)
        if "@" not in text:
            return
        data = _toml.loads(text)
    except (OSError, UnicodeDecodeError, _toml.TOMLDecodeError):
        return
    table: Any = data
    if Path(path).name == "pyproject.toml":
        tool = data.get("tool")
        table = tool.get("tritonlock") if isinstance(tool, dict) else None
        if not isinstance(table, dict):
            return
    indexes = table.get("indexes")
    urls = [v for v in indexes.values()] if isinstance(indexes, dict) else []
    builds = table.get("package-builds")
    urls += [b.get("index") for b in builds if isinstance(b, dict)] if isinstance(builds, list) else []
    for url in urls:
        if isinstance(url, str) and _urls.problem(re.sub(r"\{[a-z]+\}", "x", _urls.normalize(url))) is None:
            _urls.learn(url)


def read_intent(path: str | Path, *, target_files: bool = True) -> Intent:
    """Read triton-env.toml from disk. `target_files=False` leaves the files its target-files globs match unread (and
    out of its targets and content hash): for a caller that knows the lock is fresh and needs only the settings."""
    p = Path(path)
    try:  # a BOM (Windows editors) is not TOML, but is no error either; an intent is a few KB, a large one 1 MB
        text = read_text(p, encoding="utf-8-sig", limit=INTENT_LIMIT)
    except FileNotFoundError:
        raise IntentError(f"{p}: no such file — run `tritonlock init` to write one") from None
    except (OSError, UnicodeDecodeError) as err:
        raise IntentError(f"{p}: cannot read ({err})") from None
    return parse_intent(text, str(p), target_files=target_files)


def starter(python: str, target_comment: str = "", *, this_machine: str = "", torch_default: str = "") -> str:
    """The commented starter file `tritonlock init` writes. `this_machine`: the [[targets]] table `tritonlock host
    --save` writes for this machine, shown commented out; `torch_default`: why [indexes].torch = "default" is set
    (PyTorch's index did not answer, the default index did), else the [indexes] table stays commented out."""
    def row(line: str, comment: str) -> str:
        return f"{line.ljust(29)} # {comment}"

    lines = ["# triton-env.toml — what this project needs; `tritonlock resolve` turns it into triton-env.lock."]
    lines += [target_comment] if target_comment else []
    lines += [row('# target-files = ["hosts/*.toml"]', "other machines, a file each (see the end of this file)"),
              "[environment]",
              row(f'python = "{python}"', 'a version ("3.12") or a specifier (">=3.10"); default: this interpreter'),
              row('torch = ">=2.6"', 'PEP 440 specifier; "*" = newest that fits'),
              row('triton = "auto"', '"auto" (the version torch pins) | a specifier | "none"'),
              row("packages = []", 'extra requirements, locked with the rest, e.g. ["numpy>=1.26"]'),
              row('cuda = "auto"', '"auto" | "cpu" | a backend like "cu126" | a specifier like ">=12.4"'),
              row('cuda-policy = "compatible"', '"compatible" (CUDA minor-version compatibility) | "strict"'),
              row("# no-build = true", 'never build from source (or a list: ["flash-attn"]); default: sync builds '
                                       "what has no wheel"),
              ""]
    if torch_default:
        import textwrap

        lines += ["[indexes]"] + ["# " + line for line in textwrap.wrap(torch_default, 110)]
        lines += [row('torch = "default"', "the torch family from your default index (PyPI ships one build per "
                                           "platform)"),
                  '# default = "https://mirror.example/simple"        # everything else (default: your pip '
                  "configuration)"]
    else:
        lines += [row("# [indexes]", "optional: mirrors and private indexes"),
                  '# torch = "https://mirror.example/whl/{backend}"   # where torch, triton, torchvision… come from; '
                  '"default" = your default index',
                  '# default = "https://mirror.example/simple"        # everything else (default: your pip '
                  "configuration)"]
    lines += ["",
              "# With no targets, the one target is the machine `tritonlock resolve` runs on. To lock for several",
              "# machines, save each one — this one too — with `tritonlock host --save hosts/NAME.toml` (or describe",
              "# it: --driver, --gpus, …) and uncomment target-files at the top, or paste [[targets]] tables here.",
              "# This machine, as `tritonlock host --save` writes it:"]
    lines += [f"# {line}".rstrip() for line in this_machine.strip().splitlines() if not line.startswith("#")]
    return "\n".join(lines) + "\n"
