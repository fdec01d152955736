"""Fuzzing the spec loader (issue 5): every mutant of a shipped spec either loads with sane figures
or raises a SpecError (a ValueError) naming the file and, for a field-level problem, the field.

Mutants start from each shipped ``hardware_specs/*.yaml``: data mutations (delete a key, swap a
value's type, negate or zero a number, add an unknown key, duplicate a list element, replace the
top level) and text mutations (truncate, insert random bytes, invalid UTF-8, other encodings,
empty files). The tests at the end pin bugs found this way, all fixed.
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solkit as sk
from solkit.errors import SpecError
from solkit.hardware import spec_dirs

SHIPPED = spec_dirs()[-1]
SPEC_NAMES = sorted(p.name for p in SHIPPED.glob("*.yaml"))
RAW = {name: (SHIPPED / name).read_bytes() for name in SPEC_NAMES}
DATA = {name: yaml.safe_load(RAW[name].decode("utf-8")) for name in SPEC_NAMES}
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_serial = itertools.count()

#: replacement values by type, for type swaps (a value is swapped for one of another type)
SWAPS: dict[str, Any] = {"str": "swapped text", "int": 7, "float": 2.5, "list": [1, "a"], "dict": {"x": 1},
                         "none": None, "bool": True}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "float" if isinstance(value, float) else "int"
    if value is None:
        return "none"
    return {dict: "dict", list: "list"}.get(type(value), "str")  # str, and dates (a string in the file)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys and indexes) under ``node``, the root () excluded."""
    out: list[tuple] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        out.append(prefix + (key,))
        out.extend(_paths(child, prefix + (key,)))
    return out


def _get(data: Any, path: tuple) -> Any:
    for key in path:
        data = data[key]
    return data


def _write(folder: Path, content: bytes) -> Path:
    """A fresh file per mutant (the loader caches by path, mtime and size)."""
    path = folder / f"mutant{next(_serial)}.yaml"
    path.write_bytes(content)
    return path


def _dump(data: Any) -> bytes:
    return yaml.dump(data, Dumper=DUMPER, sort_keys=False, allow_unicode=True).encode("utf-8")


def _assert_sane(gpu: sk.GPU) -> None:
    """A spec that loads has finite, positive figures."""
    figures = {"memory_bandwidth": gpu.memory_bandwidth, "memory_capacity": gpu.memory_capacity,
               "l2_cache": gpu.l2_cache, "sm_count": gpu.sm_count}
    for p in gpu.peaks:
        figures[f"peak {p.precision}/{p.unit}"] = gpu.peak_flops(p.precision, p.unit)
        if p.sparse_tflops is not None:
            figures[f"sparse {p.precision}/{p.unit}"] = p.sparse_tflops * 1e12
    if gpu.measured is not None:
        figures.update({f"measured matmul {k}": v for k, v in gpu.measured.matmul_rate_tflops.items()})
        figures.update(copy=gpu.measured.copy_bandwidth_tb_s, launch=gpu.measured.launch_floor_us)
    bad = {k: v for k, v in figures.items() if not (math.isfinite(v) and v > 0)}
    assert not bad, f"{gpu.name} loaded with non-finite or non-positive figures: {bad}"


def _load(path: Path) -> sk.GPU:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SpecConsistencyWarning on odd but valid figures
        return sk.load_gpu(path)


def check_mutant(path: Path, fields: tuple[str, ...] | None) -> str:
    """Load ``path``: it loads sanely, or raises a SpecError naming the file and one of ``fields``.

    Any other exception propagates and fails the test. Returns "loaded" or "rejected".
    """
    try:
        gpu = _load(path)
    except SpecError as exc:
        message = str(exc)
        assert isinstance(exc, ValueError)
        assert str(path.resolve()) in message, f"the file is not named: {message}"
        if fields:
            assert any(re.search(rf"(?<![\w]){re.escape(f)}(?![\w])", message) for f in fields), (
                f"none of the fields {fields} is named: {message}")
        return "rejected"
    _assert_sane(gpu)
    return "loaded"


@pytest.fixture(scope="module")
def spec_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the mutants of this module (hypothesis does not mix with function-scoped tmp_path)."""
    return tmp_path_factory.mktemp("spec_mutants")


# ---- strategies ---------------------------------------------------------------------------


@st.composite
def data_mutants(draw: Any) -> tuple[str, bytes, tuple[str, ...] | None]:
    """(description, file bytes, fields the error must name) of a mutation of a parsed spec."""
    name = draw(st.sampled_from(SPEC_NAMES), label="spec")
    data = copy.deepcopy(DATA[name])
    paths = _paths(data)
    kind = draw(st.sampled_from(["delete", "swap", "negate", "zero", "unknown_key", "duplicate", "top_level"]), label="kind")
    if kind == "top_level":
        data = draw(st.sampled_from([[data], 42, "just text", 2.5, [1, 2]]), label="top")
        return f"{name}: top level -> {type(data).__name__}", _dump(data), None
    if kind in ("negate", "zero"):
        paths = [p for p in paths if _kind(_get(data, p)) in ("int", "float")]
    elif kind == "unknown_key":
        paths = [()] + [p for p in paths if isinstance(_get(data, p), dict)]
    elif kind == "duplicate":
        paths = [p for p in paths if isinstance(_get(data, p), list) and _get(data, p)]
    path = draw(st.sampled_from(paths), label="path")
    parent, key = (_get(data, path[:-1]), path[-1]) if path else (None, None)
    fields: tuple[str, ...] = (".".join(map(str, path)), str(path[0])) if path else ()
    if kind == "delete":
        del parent[key]
    elif kind == "swap":
        old = _kind(parent[key])
        new = draw(st.sampled_from(sorted(k for k in SWAPS if k != old and {k, old} != {"int", "float"})), label="to")
        parent[key] = copy.deepcopy(SWAPS[new])
        kind = f"swap {old} -> {new}"
    elif kind == "negate":
        parent[key] = -parent[key] if parent[key] else -1
    elif kind == "zero":
        parent[key] = 0
    elif kind == "unknown_key":
        extra = "zz_" + draw(st.from_regex(r"[a-z]{1,8}", fullmatch=True), label="key")
        _get(data, path)[extra] = draw(st.sampled_from([1, "x", None, [1]]), label="value")
        fields += (extra,)
    elif kind == "duplicate":
        items = _get(data, path)
        items.append(copy.deepcopy(items[draw(st.integers(0, len(items) - 1), label="item")]))
    return f"{name}: {kind} at {'.'.join(map(str, path)) or '(top level)'}", _dump(data), fields


INVALID_UTF8 = [b"\xff", b"\x80", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xe9"]


@st.composite
def text_mutants(draw: Any) -> tuple[str, bytes]:
    """(description, file bytes) of a byte-level mutation of a shipped spec file."""
    name = draw(st.sampled_from(SPEC_NAMES), label="spec")
    raw = RAW[name]
    kind = draw(st.sampled_from(["truncate", "insert_bytes", "invalid_utf8", "empty", "utf16", "latin1"]), label="kind")
    at = draw(st.integers(0, len(raw)), label="at")
    if kind == "truncate":
        return f"{name}: truncated at byte {at}", raw[:at]
    if kind == "insert_bytes":
        junk = draw(st.binary(min_size=1, max_size=16), label="bytes")
        return f"{name}: {junk!r} inserted at byte {at}", raw[:at] + junk + raw[at:]
    if kind == "invalid_utf8":
        junk = draw(st.sampled_from(INVALID_UTF8), label="bytes")
        return f"{name}: invalid UTF-8 {junk!r} at byte {at}", raw[:at] + junk + raw[at:]
    if kind == "empty":
        return f"{name}: emptied", draw(st.sampled_from([b"", b"\n", b"   \n\n", b"# only a comment\n"]))
    if kind == "utf16":
        return f"{name}: UTF-16", raw.decode("utf-8").encode(draw(st.sampled_from(["utf-16", "utf-16-le", "utf-32"])))
    text = raw.decode("utf-8")
    pos = draw(st.integers(0, len(text)), label="char")
    return f"{name}: latin-1 with an e-acute at char {pos}", (text[:pos] + "\xe9" + text[pos:]).encode("latin-1", "replace")


# ---- the fuzz -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_shipped_spec_loads_sane(name):
    """Every shipped spec loads unmodified with finite, positive figures (the fuzz's starting points)."""
    _assert_sane(_load(SHIPPED / name))


@FUZZ
@given(mutant=data_mutants())
def test_data_mutants_load_sane_or_name_file_and_field(spec_folder, mutant):
    """Deleted keys, swapped types, bad numbers, unknown keys, duplicates: sane, or a SpecError naming file and field."""
    description, content, fields = mutant
    path = _write(spec_folder, content)
    try:
        check_mutant(path, fields)
    except AssertionError as exc:
        raise AssertionError(f"{description}: {exc}") from None


@FUZZ
@given(mutant=text_mutants())
def test_text_mutants_load_sane_or_name_file(spec_folder, mutant):
    """Truncations, random bytes, invalid UTF-8, other encodings, empty files: sane, or a SpecError naming the file."""
    description, content = mutant
    path = _write(spec_folder, content)
    try:
        check_mutant(path, None)
    except AssertionError as exc:
        raise AssertionError(f"{description}: {exc}") from None


# ---- deterministic cases with exact messages ------------------------------------------------


def _h200() -> dict[str, Any]:
    return copy.deepcopy(DATA["h200-sxm.yaml"])


def _spec_error(path: Path) -> str:
    """The message of the SpecError that loading ``path`` raises, with the path written <P>."""
    with pytest.raises(SpecError) as info:
        _load(path)
    assert isinstance(info.value, ValueError)
    return str(info.value).replace(str(path.resolve()), "<P>")


def _h200_with(tmp_path: Path, *edits: tuple[tuple, Any]) -> Path:
    data = _h200()
    for where, value in edits:
        parent = _get(data, where[:-1])
        if value is KeyError:
            del parent[where[-1]]
        elif where[-1] == "append":
            parent.append(value)
        else:
            parent[where[-1]] = value
    return _write(tmp_path, _dump(data))


@pytest.mark.parametrize(
    "edit, expected",
    [
        ((("memory", "bandwidth_tb_s"), KeyError), "<P>: field 'memory.bandwidth_tb_s': Field required"),
        ((("memory", "bandwidth_tb_s"), -4.8), "<P>: field 'memory.bandwidth_tb_s': Input should be greater than 0 (got -4.8)"),
        ((("chip", "compute_units"), 0), "<P>: field 'chip.compute_units': Input should be greater than 0 (got 0)"),
        ((("memory", "bandwith_tb_s"), 4.8), "<P>: field 'memory.bandwith_tb_s': Extra inputs are not permitted (got 4.8)"),
        ((("chip", "compute_units"), "many"),
         "<P>: field 'chip.compute_units': Input should be a valid integer (got 'many')"),
        ((("peaks", 0, "tflops"), [1, 2]), "<P>: field 'peaks.0.tflops': Input should be a valid number"),
        ((("interconnect", "bandwidth_gb_s"), "fast"),
         "<P>: field 'interconnect.bandwidth_gb_s': Input should be a valid number (got 'fast')"),
        # the h200 lists 10 peaks (0..9); peaks[4] is bf16 matrix, appended again as peaks[10]
        ((("peaks", "append"), copy.deepcopy(DATA["h200-sxm.yaml"]["peaks"][4])),
         "<P>: field 'peaks.10': bf16 matrix is listed twice (first as peaks.4)"),
        ((("sources", "append"), copy.deepcopy(DATA["h200-sxm.yaml"]["sources"][0])),
         "<P>: field 'sources.5.id': 'h200-page' is listed twice (first as sources.0)"),  # after its 5 sources
    ],
    ids=["missing", "negative", "zero", "unknown key", "string for int", "list for float", "string for optional float",
         "duplicate peak", "duplicate source"],
)
def test_field_errors_exact(tmp_path, edit, expected):
    """Field-level problems give the exact 'path: field ...: problem (got value)' message."""
    assert _spec_error(_h200_with(tmp_path, edit)) == expected


@pytest.mark.parametrize(
    "content, expected",
    [
        (b"", "<P>: the file is empty (no YAML document); expected a mapping of spec fields"),
        (b"- a\n- b\n", "<P>: expected a mapping of spec fields at the top level, got list"),
        (b"42\n", "<P>: expected a mapping of spec fields at the top level, got int"),
        (b"name: [unclosed\n", "<P>: YAML syntax error at line 2, column 1: expected ',' or ']', but got '<stream end>'"),
        (b"name: x\n\tfull_name: y\n",
         "<P>: YAML syntax error at line 2, column 1: found character '\\t' that cannot start any token"),
        # "name: h200" is 10 bytes, so the 0xff is byte 10
        (b"name: h200\xff\n", "<P>: not UTF-8 text (invalid start byte at byte 10)"),
        ("name: h200\n".encode("utf-16"), "<P>: not UTF-8 text (invalid start byte at byte 0)"),
    ],
    ids=["empty", "top-level list", "top-level scalar", "unclosed bracket", "tab indent", "invalid utf-8", "utf-16"],
)
def test_file_errors_exact(tmp_path, content, expected):
    """Empty files, non-mappings, syntax errors and wrong encodings give exact messages naming the file."""
    assert _spec_error(_write(tmp_path, content)) == expected


def test_bad_file_in_a_spec_folder_is_named(tmp_path):
    """A broken spec in a user folder is skipped with a warning naming it; asked for, it raises naming file and field."""
    from solkit.hardware import SpecFolderWarning

    bad = _h200_with(tmp_path, (("memory", "bandwidth_tb_s"), -1))
    with pytest.warns(SpecFolderWarning) as caught:
        assert "h200-sxm" in sk.list_gpus(spec_path=tmp_path)  # the shipped one: the mutant is not named h200-sxm.yaml
    assert any(str(bad.resolve()) in str(w.message) and "memory.bandwidth_tb_s" in str(w.message) for w in caught)
    with pytest.raises(SpecError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk.load_gpu(bad.stem, spec_path=tmp_path)
    assert str(bad.resolve()) in str(info.value) and "memory.bandwidth_tb_s" in str(info.value)


# ---- bugs the fuzzing found (fixed; each test keeps it fixed) -------------------------------


def _expect_spec_error(path: Path, field: str) -> None:
    """Loading must raise a SpecError naming the file and ``field``."""
    try:
        gpu = _load(path)
    except SpecError as exc:
        assert str(path.resolve()) in str(exc) and field in str(exc), str(exc)
        return
    raise AssertionError(f"loaded silently: bandwidth {gpu.memory_bandwidth}, bf16 {gpu.peak_flops('bf16')}, "
                         f"{gpu.sm_count} SMs")


def test_impossible_date_is_a_spec_error(tmp_path):
    """measured.date: 2026-13-45 matches YAML's timestamp pattern; expected a SpecError naming measured.date."""
    text = _dump(_h200()).replace(b"date: 2026-11-30", b"date: 2026-13-45")
    assert b"2026-13-45" in text
    _expect_spec_error(_write(tmp_path, text), "date")


@pytest.mark.parametrize(
    "where, value, field",
    [
        (("memory", "bandwidth_tb_s"), float("inf"), "memory.bandwidth_tb_s"),  # '.inf' in the file
        (("peaks", 4, "tflops"), float("inf"), "peaks.4.tflops"),  # bf16 matrix
        (("memory", "bandwidth_tb_s"), 1e300, "memory.bandwidth_tb_s"),  # 1e300 TB/s = 1e312 B/s = inf
        (("memory", "capacity_gb"), 1e300, "memory.capacity_gb"),  # 1e300 GB = 1e309 B = inf
    ],
    ids=["bandwidth .inf", "bf16 tflops .inf", "bandwidth 1e300 TB/s", "capacity 1e300 GB"],
)
def test_non_finite_figures_are_spec_errors(tmp_path, where, value, field):
    """A figure that is infinite in the file or in SI units is a SpecError naming it, never an inf peak or bandwidth."""
    _expect_spec_error(_h200_with(tmp_path, (where, value)), field)


@pytest.mark.parametrize("where, field", [(("memory", "bandwidth_tb_s"), "memory.bandwidth_tb_s"),
                                          (("chip", "compute_units"), "chip.compute_units")])
def test_bool_is_not_a_number(tmp_path, where, field):
    """bandwidth_tb_s: true or compute_units: true is a SpecError, not 1 TB/s or 1 SM."""
    _expect_spec_error(_h200_with(tmp_path, (where, True)), field)


def test_huge_integer_is_a_spec_error(tmp_path):
    """chip.compute_units with 401 digits: expected a SpecError naming chip.compute_units."""
    _expect_spec_error(_h200_with(tmp_path, (("chip", "compute_units"), 10**400)), "chip.compute_units")


def test_duplicate_key_is_a_spec_error(tmp_path):
    """memory.bandwidth_tb_s given twice (4.8, then 48) is a SpecError naming it, not a silent 48 TB/s."""
    text = RAW["h200-sxm.yaml"].replace(b"  bandwidth_tb_s: 4.8 ", b"  bandwidth_tb_s: 4.8\n  bandwidth_tb_s: 48 ", 1)
    assert text.count(b"  bandwidth_tb_s: ") == 2
    path = _write(tmp_path, text)
    _expect_spec_error(path, "bandwidth_tb_s")


def test_deep_nesting_is_a_spec_error(tmp_path):
    """notes: [[[...]]] 5000 deep is a SpecError naming the file, not a RecursionError."""
    text = RAW["h200-sxm.yaml"] + b"\nextra: " + b"[" * 5000 + b"]" * 5000 + b"\n"
    _expect_spec_error(_write(tmp_path, text), "")


def test_unreadable_file_is_a_spec_error(tmp_path, monkeypatch):
    """A spec the process may not read is a SpecError naming it (simulated: running as root ignores chmod)."""
    from solkit.hardware import loader

    path = _write(tmp_path, RAW["h200-sxm.yaml"])

    def denied(file: Any, *args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(file))

    monkeypatch.setattr(loader, "open_regular", denied)  # the loader's opener, not os.open
    _expect_spec_error(path, "Permission denied (EACCES)")


def test_rewritten_file_is_reloaded(tmp_path):
    """Rewriting 4.8 -> 9.8 TB/s (same size; mtime as before, as on a coarse-mtime file system) loads 9.8e12 B/s."""
    path = _write(tmp_path, RAW["h200-sxm.yaml"])
    assert _load(path).memory_bandwidth == 4.8e12
    before = path.stat()
    path.write_bytes(RAW["h200-sxm.yaml"].replace(b"bandwidth_tb_s: 4.8 ", b"bandwidth_tb_s: 9.8 ", 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _load(path).memory_bandwidth == 9.8e12
