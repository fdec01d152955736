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
    """A spec in a folder must be named after its 'name' field: skipped with a warning, its error raised when asked for."""
    from solkit.hardware import SpecFolderWarning

    _write(tmp_path, "other", _h200_data())
    with pytest.warns(SpecFolderWarning, match="skipped .*other.yaml"):
        assert "other" not in sk.list_gpus(spec_path=tmp_path)
    with pytest.raises(SpecError, match="field 'name' is 'h200-sxm' but the file is named 'other'.yaml"):
        sk.load_gpu("other", spec_path=tmp_path)


def test_shipped_specs_are_consistent():
    """Every shipped spec passes the per-SM and precision-ratio checks."""
    from solkit.hardware import consistency_issues

    for name in sk.list_gpus():
        assert consistency_issues(sk.load_gpu(name)) == [], name


def test_sparse_bf16_entered_as_dense_is_an_error(tmp_path):
    """bf16 1979 'dense' on 132 SMs at 1980 MHz implies 7572 FLOP/clk/SM; Hopper does 4096: a SpecError, every load."""
    data = _h200_data()
    for p in data["peaks"]:
        if p["precision"] in ("bf16", "fp16") and p["unit"] == "matrix":
            p["tflops"] = 1979  # 1979e12 / (132 * 1.98e9) = 7572 FLOP/clock/SM
            p.pop("sparse_tflops", None)
    path = _write(tmp_path, "h200-sxm", data)
    for _ in range(2):  # the second load is refused too (a cached warning used to let it through)
        with pytest.raises(SpecError, match=r"peaks.4.tflops': bf16 matrix peak 1979 TFLOP/s implies 7572 FLOP/clock/SM"
                                            r" .* hopper does 4096"):
            sk.load_gpu(path)


def test_sparse_fp8_entered_as_dense_is_an_error(tmp_path):
    """fp8 3958 'dense' implies 15144 FLOP/clk/SM; Hopper's fp8 does 2 x 4096 = 8192: a SpecError naming peaks.6.tflops."""
    data = _h200_data()
    fp8 = next(p for p in data["peaks"] if p["precision"] == "fp8")
    fp8["tflops"], fp8["sparse_tflops"] = 3958, 7916  # 3958e12 / (132 * 1.98e9) = 15144
    with pytest.raises(SpecError, match=r"peaks.6.tflops': fp8 matrix peak 3958 TFLOP/s implies 15144 FLOP/clock/SM"):
        sk.load_gpu(_write(tmp_path, "h200-sxm", data))


def test_low_per_clock_rate_warns_every_load(tmp_path):
    """bf16 494.7 (the tf32 figure) on a Hopper implies 1893 FLOP/clk/SM, under 0.7 x 4096: a warning, not an error."""
    from solkit.errors import SpecConsistencyWarning

    data = _h200_data()
    del data["measured"]  # its bf16 ceiling (708.5) would exceed the new peak
    bf16 = next(p for p in data["peaks"] if p["precision"] == "bf16" and p["unit"] == "matrix")
    bf16["tflops"], bf16["sparse_tflops"] = 494.7, 989.4  # 494.7e12 / (132 * 1.98e9) = 1893
    path = _write(tmp_path, "h200-sxm", data)
    with pytest.warns(SpecConsistencyWarning, match=r"bf16 matrix peak 494.7 TFLOP/s implies 1893 FLOP/clock/SM"):
        gpu = sk.load_gpu(path)
    assert gpu.peak_flops("bf16") == 494.7e12


def test_unknown_architecture_ratio_warns(tmp_path):
    """An architecture without a per-clock rate: fp8 4 x bf16 (Hopper's ratio is 2) warns rather than refuses."""
    from solkit.errors import SpecConsistencyWarning

    data = _h200_data()
    data["architecture"] = "hopper-next"
    fp8 = next(p for p in data["peaks"] if p["precision"] == "fp8")
    fp8["tflops"], fp8["sparse_tflops"] = 3957.6, 7915.2  # 4 x 989.4
    with pytest.warns(SpecConsistencyWarning, match=r"fp8 matrix peak 3957.6 is 4 x bf16"):
        sk.load_gpu(_write(tmp_path, "h200-sxm", data))


# ---- spec folders: the collision rule, stray files ------------------------------------------------


def _renamed_h100(name: str, aliases: list[str]) -> dict:
    data = yaml.safe_load((SHIPPED / "h100-sxm.yaml").read_text())
    data.update(name=name, aliases=aliases)
    return data


def test_a_copy_keeping_a_shipped_alias_is_refused_naming_both_files(tmp_path):
    """my-h100.yaml keeping aliases [h100]: 'h100' names two files, so it is refused naming both; each loads by name."""
    from solkit.hardware import SpecFolderWarning

    mine = _write(tmp_path, "my-h100", _renamed_h100("my-h100", ["h100"]))
    with pytest.warns(SpecFolderWarning, match="both claim the name 'h100'"):
        with pytest.raises(SpecError) as info:
            sk.load_gpu("h100", spec_path=tmp_path)
    assert str(mine) in str(info.value) and str(SHIPPED / "h100-sxm.yaml") in str(info.value)
    assert sk.load_gpu("my-h100", spec_path=tmp_path).name == "my-h100"  # the index is built: no second warning
    assert sk.load_gpu("h100-sxm5", spec_path=tmp_path).name == "h100-sxm"  # the shipped file's other alias


def test_same_file_name_shadows_with_a_warning(tmp_path):
    """A user h200-sxm.yaml replaces the shipped one, aliases included, and says so."""
    from solkit.hardware import SpecFolderWarning

    data = _h200_data()
    data.update(full_name="My H200", aliases=["mine"])
    _write(tmp_path, "h200-sxm", data)
    with pytest.warns(SpecFolderWarning, match="shadows .*hardware_specs/h200-sxm.yaml"):
        assert sk.load_gpu("mine", spec_path=tmp_path).full_name == "My H200"
    with pytest.warns(SpecFolderWarning), pytest.raises(UnknownGPUError):
        sk.load_gpu("h200", spec_path=tmp_path)  # the shipped alias went with the shadowed file


def test_stray_files_do_not_break_the_good_specs(tmp_path):
    """notes.yaml, a dangling symlink, a README and a subfolder: h200 loads; notes and ghost raise their own errors."""
    import os

    from solkit.hardware import SpecFolderWarning

    (tmp_path / "notes.yaml").write_text("todo: benchmark the B200\n")
    (tmp_path / "README.md").write_text("# my specs\n")
    (tmp_path / "systems").mkdir()
    os.symlink(tmp_path / "nowhere.yaml", tmp_path / "ghost.yaml")
    with pytest.warns(SpecFolderWarning) as caught:
        assert sk.load_gpu("h200", spec_path=tmp_path).name == "h200-sxm"
    assert sorted(Path(str(w.message).split()[1]).name for w in caught) == ["ghost.yaml", "notes.yaml"]
    with pytest.raises(SpecError, match="notes.yaml: not a GPU spec: none of its top-level keys \\(todo\\)"):
        sk.load_gpu("notes", spec_path=tmp_path)
    with pytest.raises(SpecError, match="ghost.yaml: no such spec file"):
        sk.load_gpu("ghost", spec_path=tmp_path)


# ---- the cache ---------------------------------------------------------------------------------


def test_cached_load_is_one_stat_and_no_read(monkeypatch):
    """A cached load_gpu('h200') costs one os.stat and opens no file."""
    import os

    from solkit.hardware import loader

    sk.load_gpu("h200")
    calls = []
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda *a, **k: calls.append(a) or real_stat(*a, **k))
    monkeypatch.setattr(loader, "open_regular", lambda *a, **k: pytest.fail("opened a file"))
    assert sk.load_gpu("h200").name == "h200-sxm"
    assert len(calls) == 1


def test_a_racy_entry_is_checked_by_content(tmp_path, monkeypatch):
    """A file rewritten within one ctime tick keeps its (inode, ctime, size) key; its fresh entry is compared by bytes."""
    import os

    from solkit.hardware import loader

    path = _write(tmp_path, "h200-sxm", (SHIPPED / "h200-sxm.yaml").read_text())
    first = os.stat(path)
    assert sk.load_gpu(path).memory_bandwidth == 4.8e12
    path.write_text((SHIPPED / "h200-sxm.yaml").read_text().replace("bandwidth_tb_s: 4.8 ", "bandwidth_tb_s: 5.8 ", 1))
    monkeypatch.setattr(loader, "stat_spec", lambda p, what: first)  # the same key, as within a coarse ctime tick
    assert sk.load_gpu(path).memory_bandwidth == 5.8e12


def test_loaded_tables_are_read_only_and_picklable():
    """A measured table refuses changes (TypeError) and the next load is unchanged; a GPU pickles."""
    import pickle

    gpu = sk.load_gpu("h200")
    before = dict(gpu.measured.compute_efficiency)
    key = next(iter(before))
    with pytest.raises(TypeError, match="read-only"):
        gpu.measured.compute_efficiency[key] = before[key] + 1.0  # type: ignore[index]
    with pytest.raises(TypeError, match="read-only"):
        gpu.measured.compute_efficiency["new key"] = 0.5  # type: ignore[index]
    with pytest.raises(SpecError, match="GPU.name is read-only"):
        gpu.name = "x"  # type: ignore[misc]
    assert dict(gpu.measured.compute_efficiency) == before
    assert dict(sk.load_gpu("h200").measured.compute_efficiency) == before
    assert pickle.loads(pickle.dumps(gpu)) == gpu


def test_oversized_file_is_refused_before_reading(tmp_path, monkeypatch):
    """A file over 1 MiB is refused from its stat alone (no read)."""
    from solkit.hardware import loader

    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * (2**20 + 1))
    monkeypatch.setattr(loader, "open_regular", lambda *a, **k: pytest.fail("read an oversized file"))
    with pytest.raises(SpecError, match=r"over the 1,048,576-byte \(1 MiB\) limit .*: 1,048,577 bytes"):
        sk.load_gpu(path)
