"""The fast path of reading many reports decides exactly as the slow one: the schema
compiled by fastjsonschema accepts a document if and only if jsonschema does, over
every field of real reports bent every way a hostile file would bend it; and the
value scan's fast pass agrees with the one that names the path.

Speed itself is a benchmark (benchmarks/many_reports_speed.py), never a test."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecocompute.report.numbers import _all_safe, unsafe_values
from ecocompute.report.schema import LEGACY_SCHEMAS, SWEEP_SCHEMA, _compiled, schema_errors

REPO = Path(__file__).resolve().parents[2]
SAMPLES = [
    "docs/validation/h200-map/map-7b/synthetic-llama-2-7b-b1/INT4/energy.json",  # 1.4 session
    "docs/validation/h200-verdict/eager-7b-ci3/energy.json",  # 1.3
]
BENDS = (None, "x", -1, 1.5, True, [])


def _paths(doc, path=(), depth=0):
    """Every (path) to a value, taking only the first item of long lists."""
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*path, k), depth + 1)
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:1]):
            yield from _paths(v, (*path, i), depth + 1)


def _set(doc, path, value):
    node = doc
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value


_DELETE = object()


def _agree(doc, name) -> bool:
    fast = schema_errors(doc, name) == []
    slow = schema_errors(doc, name, thorough=True) == []
    return fast == slow


@pytest.mark.parametrize("sample", SAMPLES)
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_compiled_and_jsonschema_agree_on_every_bent_field(sample):
    pytest.importorskip("fastjsonschema")
    doc = json.loads((REPO / sample).read_text())
    name = LEGACY_SCHEMAS[doc["schema_version"]]
    assert _compiled(name) is not None  # the fast path is really in use
    assert schema_errors(doc, name) == [] and _agree(doc, name)
    checked = 0
    for path in list(_paths(doc))[1:]:
        for bend in (*BENDS, _DELETE):
            bent = copy.deepcopy(doc)
            _set(bent, path, bend)
            checked += 1
            if not _agree(bent, name):
                pytest.fail(f"{'/'.join(map(str, path))} = {bend!r}: the validators disagree")
        if isinstance(_get(doc, path), dict):  # an unknown key in a closed object
            bent = copy.deepcopy(doc)
            _get(bent, path)["not_a_field"] = 1
            checked += 1
            assert _agree(bent, name), f"{'/'.join(map(str, path))}: an extra key"
    assert checked > 500  # every disagreement failed the test above


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def test_the_sweep_schema_agrees_too():
    pytest.importorskip("fastjsonschema")
    doc = json.loads((REPO / "docs/validation/h200-map/map-7b/sweep.json").read_text())
    assert schema_errors(doc, SWEEP_SCHEMA) == []
    for path in list(_paths(doc))[1:]:
        for bend in (None, -1, _DELETE):
            bent = copy.deepcopy(doc)
            _set(bent, path, bend)
            fast = schema_errors(bent, SWEEP_SCHEMA) == []
            assert fast == (schema_errors(bent, SWEEP_SCHEMA, thorough=True) == []), path


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_the_value_scans_fast_pass_agrees_with_the_one_that_names_the_path(value):
    assert _all_safe(value) == (unsafe_values(value) == [])


def test_the_value_scan_still_finds_each_kind_of_bad_value():
    for bad in ({"a": math.nan}, [1, [math.inf]], {"x": 10**40}, {"t": "\udce9"}, {"\udce9": 1}):
        assert not _all_safe(bad) and unsafe_values(bad)
    deep: list = []
    node = deep
    for _ in range(200):
        node.append([])
        node = node[0]
    node.append(1)
    assert not _all_safe(deep) and unsafe_values(deep)
