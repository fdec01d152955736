"""Spec loader: names, aliases, user files and folders, and clear errors for bad files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import solkit as sk
from solkit.errors import SpecError, UnknownGPUError, UnsupportedPrecisionError
from solkit.hardware import SPEC_PATH_ENV, spec_dirs

SHIPPED = spec_dirs()[-1]


def _h200_data() -> dict:
    return yaml.safe_load((SHIPPED / "h200-sxm.yaml").read_text())


def _write(folder: Path, name: str, data) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return path


def test_names_are_case_insensitive_and_aliases_resolve():
    """'H200' and 'h200' are the canonical h200-sxm."""
    assert sk.load_gpu("H200").name == "h200-sxm"
    assert sk.load_gpu("h200-SXM").name == "h200-sxm"
    assert "h200-sxm" in sk.list_gpus()


def test_si_units():
    """The file says 141 GB, 4.8 TB/s, 60 MB (MiB) L2; Python says bytes and bytes/s."""
    g = sk.load_gpu("h200")
    assert g.memory_capacity == 141e9
    assert g.memory_bandwidth == 4.8e12
    assert g.l2_cache == 60 * 2**20  # 62,914,560 B, as the device reports
    assert g.sm_count == 132


def test_unknown_gpu_lists_known_names():
    """A typo names the known GPUs."""
    with pytest.raises(UnknownGPUError, match="known names: .*h200-sxm") as info:
        sk.load_gpu("h2000")
    assert isinstance(info.value, LookupError)


def test_unsupported_precision_names_gpu_and_precision():
    """fp4 on the H200 (Hopper has no fp4 tensor cores) is an error naming both."""
    with pytest.raises(UnsupportedPrecisionError, match="h200-sxm has no matrix peak for precision 'fp4'"):
        sk.load_gpu("h200").peak_flops("fp4")


def test_load_by_path_and_folder(tmp_path, monkeypatch):
    """A user's file loads by path, by folder argument and through $SOLKIT_SPEC_PATH."""
    data = _h200_data()
    data.update(name="my-gpu", full_name="My GPU", aliases=["mine"])
    path = _write(tmp_path, "my-gpu", data)
    assert sk.load_gpu(path).name == "my-gpu"
    assert sk.load_gpu(str(path)).name == "my-gpu"
    assert sk.load_gpu("MINE", spec_path=tmp_path).name == "my-gpu"
    assert "my-gpu" in sk.list_gpus(spec_path=tmp_path)
    assert "my-gpu" not in sk.list_gpus()
    monkeypatch.setenv(SPEC_PATH_ENV, str(tmp_path))
    assert sk.load_gpu("my-gpu").full_name == "My GPU"


def test_missing_spec_folder(tmp_path):
    """A folder that does not exist is named."""
    with pytest.raises(SpecError, match="does not exist"):
        sk.load_gpu("h200", spec_path=tmp_path / "nope")


def _mutate(data: dict, path: tuple, value=None, delete: bool = False) -> dict:
    node = data
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


@pytest.mark.parametrize(
    "path, value, delete, field",
    [
        (("memory", "bandwidth_tb_s"), None, True, "memory.bandwidth_tb_s"),  # missing field
        (("memory", "bandwidth_tb_s"), "fast", False, "memory.bandwidth_tb_s"),  # wrong type
        (("memory", "bandwidth_tb_s"), -4.8, False, "memory.bandwidth_tb_s"),  # negative
        (("chip", "compute_units"), 0, False, "chip.compute_units"),  # zero
        (("memory", "bandwith_tb_s"), 4.8, False, "memory.bandwith_tb_s"),  # typo: unknown key
        (("peaks", 0, "tflops"), 0, False, "peaks.0.tflops"),
        (("peaks", 0, "precision"), "fp7", False, "peaks.0.precision"),
        (("chip", "source"), "nowhere", False, "chip.source"),
        (("name",), "H200 SXM", False, "name"),
    ],
)
def test_bad_field_names_file_and_field(tmp_path, path, value, delete, field):
    """Each malformed field is a SpecError (a ValueError) naming the file and the field."""
    data = _mutate(_h200_data(), path, value, delete)
    spec = _write(tmp_path, "h200-sxm", data)
    with pytest.raises(SpecError) as info:
        sk.load_gpu(spec)
    message = str(info.value)
    assert str(spec) in message
    assert field in message
    assert isinstance(info.value, ValueError)


def test_sparse_figure_entered_as_dense_is_caught(tmp_path):
    """A dense figure above its own sparse figure means the two were swapped."""
    data = _h200_data()
    bf16 = next(p for p in data["peaks"] if p["precision"] == "bf16" and p["unit"] == "matrix")
    bf16["tflops"], bf16["sparse_tflops"] = 1979, 989.4
    with pytest.raises(SpecError, match="sparse_tflops 989.4 is below the dense tflops 1979"):
        sk.load_gpu(_write(tmp_path, "h200-sxm", data))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("name: [unclosed\n", "YAML syntax error at line"),
        ("", "expected a mapping"),
        ("- a\n- b\n", "expected a mapping"),
    ],
)
def test_syntax_errors(tmp_path, text, expected):
    """YAML syntax errors and non-mappings name the file."""
    spec = _write(tmp_path, "broken", text)
    with pytest.raises(SpecError, match=expected) as info:
        sk.load_gpu(spec)
    assert str(spec) in str(info.value)


def test_wrong_encoding(tmp_path):
    """A file that is not UTF-8 is a SpecError, not a UnicodeDecodeError."""
    spec = tmp_path / "latin.yaml"
    spec.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(SpecError, match="not UTF-8"):
        sk.load_gpu(spec)


def test_file_name_must_match(tmp_path):
    """A spec found in a folder must be named after its 'name' field."""
    _write(tmp_path, "other", _h200_data())
    with pytest.raises(SpecError, match="is named 'other'"):
        sk.list_gpus(spec_path=tmp_path)


def test_shipped_specs_are_consistent():
    """Every shipped spec passes the per-SM and precision-ratio checks."""
    from solkit.hardware import consistency_issues

    for name in sk.list_gpus():
        assert consistency_issues(sk.load_gpu(name)) == [], name


def test_sparse_bf16_entered_as_dense_warns(tmp_path):
    """bf16 1979 'dense' on 132 SMs at 1980 MHz implies 7572 FLOP/clk/SM, Hopper does 4096: a warning."""
    from solkit.errors import SpecConsistencyWarning

    data = _h200_data()
    for p in data["peaks"]:
        if p["precision"] in ("bf16", "fp16") and p["unit"] == "matrix":
            p["tflops"] = 1979  # 1979e12 / (132 * 1.98e9) = 7572 FLOP/clock/SM
            p.pop("sparse_tflops", None)
    with pytest.warns(SpecConsistencyWarning, match=r"implies 7572 FLOP/clock/SM .* hopper does 4096"):
        sk.load_gpu(_write(tmp_path, "h200-sxm", data))


def test_precision_ratio_check_warns(tmp_path):
    """fp8 3958 'dense' against bf16 989.4 is 4.0x; Hopper's fp8 is 2x bf16: a warning."""
    from solkit.errors import SpecConsistencyWarning

    data = _h200_data()
    fp8 = next(p for p in data["peaks"] if p["precision"] == "fp8")
    fp8["tflops"], fp8["sparse_tflops"] = 3958, 7916
    with pytest.warns(SpecConsistencyWarning, match=r"fp8 matrix peak 3958 is 4 x bf16"):
        sk.load_gpu(_write(tmp_path, "h200-sxm", data))
