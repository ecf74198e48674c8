"""flakelab's ordered selection for `flakelab bisect` (written by flakelab
into its store and loaded with `-p flakelab_order`; nothing is installed).

`--flakelab-order=FILE` lists tests, one a line, as pytest node ids or as
JUnit ids (`classname::name`, what flakelab records). Exactly those tests
run, in that order; every other collected test is deselected. A file whose
only line is `*` keeps every collected test in collection order (the file
order). Without the option the plugin does nothing.

`--flakelab-state=FILE` snapshots process-global state before and after
each test (setup to teardown) and appends one JSON line per test to FILE:
its id, what changed (environment, working directory, umask, locale,
sys.path, newly imported modules, module-level and class attributes of the
project's own modules, logging and warnings configuration, signal handlers,
the random generator's state, files under the project and the temporary
directory, threads and listening sockets left behind) and, when it failed,
the start of its failure text. Only `flakelab bisect` asks for it, in runs
of its own after the culprits are named.
"""

import hashlib
import json
import locale
import logging
import os
import re
import reprlib
import signal
import sys
import tempfile
import threading
import random
import warnings

import pytest

_SKIP_DIRS = {
    ".git",
    ".hg",
    ".flakelab",
    "__pycache__",
    ".pytest_cache",
    "node_modules",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
}
_MAX_FILES = 20000
_SHALLOW = reprlib.Repr()
_SHALLOW.maxlevel = 2
_SHALLOW.maxstring = 80
_SHALLOW.maxother = 80
_SHALLOW.maxdict = 8
_SHALLOW.maxlist = 8
_SHALLOW.maxset = 8
_SHALLOW.maxtuple = 8


def pytest_addoption(parser):
    parser.addoption(
        "--flakelab-order",
        default=None,
        metavar="FILE",
        help="flakelab: run exactly the tests listed in FILE, in that order",
    )
    parser.addoption(
        "--flakelab-state",
        default=None,
        metavar="FILE",
        help="flakelab: write what each test changed in process-global state to FILE",
    )


def _junit_id(nodeid):
    # The id pytest's junitxml gives a test (mangle_test_address): the file
    # path dotted without .py, the class path, then the name with params.
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]) + "::" + names[-1]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    path = config.getoption("flakelab_order")
    if not path:
        return
    with open(path, encoding="utf-8") as f:
        wanted = [line.rstrip("\n") for line in f if line.strip()]
    if wanted == ["*"]:
        return
    by_id = {}
    for item in items:
        by_id.setdefault(item.nodeid, item)
        by_id.setdefault(_junit_id(item.nodeid), item)
    keep, seen, missing = [], set(), []
    for w in wanted:
        item = by_id.get(w)
        if item is None:
            missing.append(w)
        elif id(item) not in seen:
            seen.add(id(item))
            keep.append(item)
    if missing:
        sys.stderr.write(
            "flakelab-order: %d listed test(s) were not collected, e.g. %s\n"
            % (len(missing), missing[0])
        )
    dropped = [i for i in items if id(i) not in seen]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def pytest_configure(config):
    path = config.getoption("flakelab_state", None)
    if path:
        config.pluginmanager.register(_Snapshots(path, str(config.rootpath)), "flakelab-state")


def _shallow(value):
    try:
        return _SHALLOW.repr(value)
    except Exception as e:  # a repr that raises is still a value
        return "<%s: repr raised %s>" % (type(value).__name__, type(e).__name__)


def _digest(value):
    return hashlib.sha1(repr(value).encode("utf-8", "replace")).hexdigest()[:10]


def _under(path, root):
    return path == root or path.startswith(root + os.sep)


def _project_modules(root):
    out = {}
    for name, mod in list(sys.modules.items()):
        if mod is None or name == "flakelab_order":
            continue
        f = getattr(mod, "__file__", None)
        if not f:
            continue
        f = os.path.abspath(f)
        if _under(f, root) and "site-packages" not in f and not (
            set(f[len(root):].split(os.sep)) & _SKIP_DIRS
        ):
            out[name] = mod
    return out


def _plain_attr(name, value):
    if not name.isidentifier() or name.startswith("__"):
        return False
    import types

    return not isinstance(
        value,
        (
            types.ModuleType,
            types.FunctionType,
            types.BuiltinFunctionType,
            type,
            staticmethod,
            classmethod,
            property,
        ),
    )


def _attrs(root):
    mods, classes = {}, {}
    for name, mod in _project_modules(root).items():
        try:
            items = list(vars(mod).items())
        except TypeError:
            continue
        for attr, value in items:
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                for cattr, cvalue in list(vars(value).items()):
                    if _plain_attr(cattr, cvalue):
                        classes["%s.%s.%s" % (name, attr, cattr)] = (id(cvalue), _shallow(cvalue))
            elif _plain_attr(attr, value):
                mods["%s.%s" % (name, attr)] = (id(value), _shallow(value))
    return mods, classes


def _files(top, limit, depth, skip):
    found = {}
    top_depth = top.rstrip(os.sep).count(os.sep)
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [
            d
            for d in dirnames
            if d not in _SKIP_DIRS
            and not d.startswith("pytest-of-")
            and os.path.join(dirpath, d) not in skip
        ]
        if dirpath.count(os.sep) - top_depth >= depth:
            dirnames[:] = []
        for n in filenames:
            p = os.path.join(dirpath, n)
            if p in skip:
                continue
            try:
                st = os.lstat(p)
            except OSError:
                continue
            found[p] = (st.st_size, st.st_mtime_ns)
            if len(found) >= limit:
                return found
    return found


def _listening():
    # Listening TCP sockets this process holds (Linux: /proc).
    inodes = set()
    try:
        for fd in os.listdir("/proc/self/fd"):
            try:
                link = os.readlink("/proc/self/fd/" + fd)
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return set()
    out = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if len(cols) > 9 and cols[3] == "0A" and cols[9] in inodes:
                        out.add("port %d" % int(cols[1].rsplit(":", 1)[1], 16))
        except (OSError, StopIteration, ValueError):
            continue
    return out


def _loggers():
    out = {"root": logging.getLogger()}
    for name, lg in list(logging.Logger.manager.loggerDict.items()):
        if isinstance(lg, logging.Logger):
            out[name] = lg
    return {
        n: "level=%s handlers=%d propagate=%s disabled=%s"
        % (logging.getLevelName(lg.level), len(lg.handlers), lg.propagate, lg.disabled)
        for n, lg in out.items()
    }


def _signals():
    out = {}
    for s in signal.valid_signals():
        try:
            name = signal.Signals(s).name
            out[name] = _shallow(signal.getsignal(s))
        except (ValueError, OSError):
            continue
    return out


def _snapshot(root, tmp, skip, tmp_skip):
    mask = os.umask(0o022)
    os.umask(mask)
    try:
        loc = locale.setlocale(locale.LC_ALL)
    except locale.Error:
        loc = "?"
    mods, classes = _attrs(root)
    return {
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "umask": oct(mask),
        "locale": loc,
        "zone": "/".join(__import__("time").tzname),
        "path": list(sys.path),
        "modules": set(sys.modules),
        "mods": mods,
        "classes": classes,
        "logging": _loggers(),
        "warnings": [_shallow(f) for f in warnings.filters],
        "signals": _signals(),
        "random": _digest(random.getstate()),
        "files": _files(root, _MAX_FILES, 64, skip),
        "tmp": _files(tmp, 5000, 2, tmp_skip) if not _under(tmp, root) else {},
        "threads": {t.ident: t.name for t in threading.enumerate() if t.is_alive()},
        "sockets": _listening(),
    }


def _change(kind, target, key, before, after, verb=None):
    if verb is None:
        verb = "sets" if before == "None" else "removes" if after == "None" else "changes"
    return {
        "kind": kind,
        "target": target,
        "key": key,
        "verb": verb,
        "before": before,
        "after": after,
    }


def _keyed(kind, fmt, a, b, out, key=lambda k: k):
    for k in sorted(set(a) | set(b), key=str):
        x, y = a.get(k), b.get(k)
        if x != y:
            out.append(
                _change(
                    kind,
                    fmt % (k,),
                    key(k),
                    "None" if x is None else repr(x),
                    "None" if y is None else repr(y),
                )
            )


def _diff(a, b, root):
    out = []
    _keyed("env", "os.environ[%r]", a["env"], b["env"], out)
    for kind, target in (
        ("cwd", "the working directory"),
        ("umask", "the umask"),
        ("locale", "the locale"),
        ("zone", "the time zone (time.tzname)"),
    ):
        if a[kind] != b[kind]:
            out.append(_change(kind, target, "", repr(a[kind]), repr(b[kind]), "changes"))
    if a["path"] != b["path"]:
        added = [p for p in b["path"] if p not in a["path"]]
        removed = [p for p in a["path"] if p not in b["path"]]
        out.append(
            _change(
                "sys.path",
                "sys.path",
                (added or removed or [""])[0],
                _shallow(removed) if removed else "%d entries" % len(a["path"]),
                _shallow(added) if added else "%d entries" % len(b["path"]),
                "changes",
            )
        )
    new = sorted(b["modules"] - a["modules"])
    if new:
        out.append(
            _change("modules", "sys.modules", new[0], "None", _shallow(new), "imports")
        )
    for kind, key in (("mods", "module-attribute"), ("classes", "class-attribute")):
        for name in sorted(set(a[kind]) | set(b[kind])):
            x, y = a[kind].get(name), b[kind].get(name)
            if x == y:
                continue
            attr = name.rsplit(".", 1)[1]
            if x is None or y is None:
                verb = "sets" if x is None else "deletes"
            elif x[0] == y[0]:
                verb = "mutates"
            else:
                verb = "rebinds"
            out.append(
                _change(
                    key,
                    name,
                    attr,
                    "None" if x is None else x[1],
                    "None" if y is None else y[1],
                    verb,
                )
            )
    _keyed("logging", "logging.getLogger(%r)", a["logging"], b["logging"], out)
    if a["warnings"] != b["warnings"]:
        out.append(
            _change(
                "warnings",
                "warnings.filters",
                "",
                "%d filter(s)" % len(a["warnings"]),
                "%d filter(s), first %s" % (len(b["warnings"]), (b["warnings"] or ["-"])[0]),
                "changes",
            )
        )
    _keyed("signal", "the %s handler", a["signals"], b["signals"], out)
    if a["random"] != b["random"]:
        out.append(
            _change(
                "random",
                "the random module's generator state",
                "random",
                a["random"],
                b["random"],
                "changes",
            )
        )
    for kind in ("files", "tmp"):
        for p in sorted(set(a[kind]) | set(b[kind])):
            x, y = a[kind].get(p), b[kind].get(p)
            if x == y:
                continue
            shown = os.path.relpath(p, root) if kind == "files" else p
            verb = "creates" if x is None else "deletes" if y is None else "modifies"
            out.append(
                _change(
                    "file",
                    "file %r" % shown,
                    os.path.basename(p),
                    "absent" if x is None else "%d bytes" % x[0],
                    "absent" if y is None else "%d bytes" % y[0],
                    verb,
                )
            )
    for ident, name in sorted(b["threads"].items(), key=str):
        if ident not in a["threads"]:
            out.append(_change("thread", "thread %r" % name, name, "None", "running", "leaves"))
    for port in sorted(b["sockets"] - a["sockets"]):
        out.append(_change("socket", "a listening socket on %s" % port, port, "None", "listening", "leaves"))
    return out


class _Snapshots:
    def __init__(self, path, root):
        self.path = os.path.abspath(path)
        self.root = os.path.abspath(root)
        self.tmp = os.path.abspath(tempfile.gettempdir())
        self.skip = {self.path, os.path.dirname(self.path)}
        # The project may sit in the temporary directory: its files are
        # seen once, under the project.
        self.tmp_skip = self.skip | {self.root}
        self.failures = {}

    def pytest_runtest_logreport(self, report):
        if report.failed:
            text = self.failures.get(report.nodeid, "")
            self.failures[report.nodeid] = (text + "\n" + report.longreprtext)[:8000]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        before = _snapshot(self.root, self.tmp, self.skip, self.tmp_skip)
        yield
        after = _snapshot(self.root, self.tmp, self.skip, self.tmp_skip)
        line = {
            "test": item.nodeid,
            "junit": _junit_id(item.nodeid),
            "changes": _diff(before, after, self.root),
        }
        failure = self.failures.get(item.nodeid)
        if failure:
            line["failure"] = failure
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")
