"""flakelab's ordered selection for `flakelab bisect` (written by flakelab
into its store and loaded with `-p flakelab_order`; nothing is installed).

`--flakelab-order=FILE` lists tests, one a line, as pytest node ids or as
JUnit ids (`classname::name`, what flakelab records). Exactly those tests
run, in that order; every other collected test is deselected. Without the
option the plugin does nothing.
"""

import re
import sys

import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--flakelab-order",
        default=None,
        metavar="FILE",
        help="flakelab: run exactly the tests listed in FILE, in that order",
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
