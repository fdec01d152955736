"""Adversarial cases: profile files and arguments (see adversarial.py)."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path

import solkit as sk
from adversarial import Adv
from solkit import ops
from solkit.errors import ArgumentTypeError, MeasurementError, UnknownGPUError

DATA = Path(__file__).resolve().parents[1] / "data" / "profiles"
TMP = Path(tempfile.mkdtemp(prefix="solkit-adv-profile-"))


def _file(name: str, content: bytes) -> str:
    path = TMP / name
    path.write_bytes(content)
    return os.fspath(path)


GOOD = gzip.open(DATA / "llama_decode.json.gz").read()
FILES = {
    "empty file": _file("empty.json", b""),
    "binary junk": _file("junk.bin", bytes(range(256)) * 8),
    "truncated JSON": _file("cut.json", GOOD[: len(GOOD) // 2]),
    "truncated gzip": _file("cut.json.gz", gzip.compress(GOOD)[:5000]),
    "gzip of junk": _file("junk.gz", gzip.compress(b"\x00\x01not a trace")),
    "JSON object without traceEvents": _file("obj.json", b'{"schemaVersion": 1}'),
    "JSON number": _file("num.json", b"42"),
    "CSV without ncu columns": _file("other.csv", b"a,b,c\n1,2,3\n"),
    "trace without kernels": _file("cpu.json", json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 3, "pid": 1, "tid": 1}]}).encode()),
    "plain trace named .gz": _file("plain.json.gz", GOOD),
}

CASES: list[Adv] = [
    Adv(f"profile-file: {label}", (lambda p=path: sk.load_profile(p, "h200")), MeasurementError, ValueError,
        names=(os.path.basename(path),))
    for label, path in FILES.items() if label != "plain trace named .gz"
]
CASES += [
    Adv("profile-file: a plain trace named .gz loads (format by content)",
        lambda: sk.load_profile(FILES["plain trace named .gz"], "h200"), None),
    Adv("profile-file: a missing path", lambda: sk.load_profile(TMP / "nope.json", "h200"), MeasurementError, ValueError,
        names=("nope.json",)),
    Adv("profile-file: a folder", lambda: sk.load_profile(TMP, "h200"), MeasurementError, ValueError, names=(TMP.name,)),
    Adv("profile-args: path 42", lambda: sk.load_profile(42, "h200"), ArgumentTypeError, TypeError, names=("path",)),
    Adv("profile-args: path None", lambda: sk.load_profile(None, "h200"), ArgumentTypeError, TypeError, names=("path",)),
    Adv("profile-args: an empty list", lambda: sk.load_profile([], "h200"), ArgumentTypeError, TypeError,
        names=("path",)),
    Adv("profile-args: gpu 'h2000'", lambda: sk.load_profile(DATA / "llama_decode.json.gz", "h2000"), UnknownGPUError,
        LookupError, names=("h2000",)),
    Adv("profile-args: nvtx a list", lambda: sk.load_profile(DATA / "ncu_ops.csv.gz", "h200", nvtx=[1]),
        ArgumentTypeError, TypeError, names=("nvtx",)),
    Adv("profile-args: nvtx values not workloads", lambda: sk.load_profile(DATA / "ncu_ops.csv.gz", "h200",
        nvtx={"mm": 3}), ArgumentTypeError, TypeError, names=("nvtx",)),
    Adv("profile-args: nvtx of an unknown range maps nothing",
        lambda: sk.load_profile(DATA / "ncu_ops.csv.gz", "h200", nvtx={"no such range": ops.matmul(8, 8, 8)}), None),
    Adv("profile-args: measure of a non-callable", lambda: sk.measure(3, gpu="h200"), ArgumentTypeError, TypeError,
        names=("fn",)),
]
