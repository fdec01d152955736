"""The data folder's manifest (data/manifest.yaml): every file listed once, its facts as the commit log and the files'
own records give them, and a bad manifest refused with an error naming the file and the field."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import solkit
from solkit.calibration.manifest import (MANIFEST_NAME, ROLES, DataFile, check_folder, data_dir, load_manifest, manifest,
                                        source_checkout)
from solkit.errors import OptionError, SolkitError, SpecError

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


def test_the_manifest_lists_exactly_the_files_of_data():
    """One entry per file of data/ and its subfolders (the manifest itself aside), none twice, none missing: the check
    the loader leaves out (``check_folder``) passes on the committed folder."""
    on_disk = {p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file()} - {MANIFEST_NAME}
    listed = [e.file for e in manifest().entries]
    assert len(listed) == len(set(listed)) == len(on_disk) >= 80  # 80 files when the manifest was written
    assert set(listed) == on_disk
    assert check_folder(DATA / MANIFEST_NAME) == manifest()


def test_data_dir_is_the_packages_copy_of_the_checkouts_folder():
    """solkit/data is the package's data folder; in a source checkout it is the repository's data/ (a link), and the
    checkout is found from it (where the commands write their reports by default)."""
    assert data_dir() == (Path(solkit.__file__).parent / "data").resolve() == DATA.resolve()
    assert source_checkout() == ROOT.resolve()


@pytest.mark.parametrize("name, role, seed, after, added", [
    # b9b37fd: "The frozen seed-2042 step test (90 random steps measured after be3dbc7 froze the model as it stands ...)"
    # bf28941: "Data: the frozen seed-2062 test of hand-built whole steps (90 random H200 steps, ... after c926dc3 ...)"
    ("h200_steps_test_seed2062.json", "test", 2062, "c926dc3", "bf28941"),
    ("h200_steps_test_seed2042.json", "test", 2042, "be3dbc7", "b9b37fd"),
    # d11d401: "The frozen seed-2041 step test (90 random steps measured after f08f101 froze the model ...)"
    ("h200_steps_test_seed2041.json", "test", 2041, "f08f101", "d11d401"),
    # 693cebd: "the frozen seed-2032 test draw (1,000 random cases and 200 SDPA cases ... after commit 2e97ee8 froze the model)";
    # spent since issue 31 re-scored it under b201423's model
    ("h200_sample_test_seed2032.json", "spent", 2032, "2e97ee8", "693cebd"),
    ("h200_sdpa_test_seed2032.json", "spent", 2032, "2e97ee8", "693cebd"),
    # 38c572d: "the frozen test draw of issue 31, seed 2051 (...), measured on an H200 after b201423 froze the model"
    ("h200_weak_test_seed2051.json", "test", 2051, "b201423", "38c572d"),
    ("h200_sample_test_seed2051.json", "test", 2051, "b201423", "38c572d"),
    ("h200_sdpa_test_seed2051.json", "test", 2051, "b201423", "38c572d"),
    # 2a8d3f5: "Data: the frozen seed-2055 kernel test (...), measured on an H200 from 21:24 UTC, after c34c31f (21:20)
    # froze the model"
    ("h200_weak_test_seed2055.json", "test", 2055, "c34c31f", "2a8d3f5"),
    ("h200_sample_test_seed2055.json", "spent", 2055, "c34c31f", "2a8d3f5"),
    ("h200_sdpa_test_seed2055.json", "spent", 2055, "c34c31f", "2a8d3f5"),
    # ade57d1: "data: fp32 SDPA on the H200, seed 2056 (...): the fit draw (300 cases) and the validation draw (160)"
    ("h200_sdpafp32_fit_seed2056.json", "fit", 2056, None, "ade57d1"),
    ("h200_sdpafp32_validation_seed2056.json", "validation", 2056, None, "ade57d1"),
    # eedc2c2: "data: the memory-efficient attention kernel forced in bf16/fp16 on the H200, seed 2057 (...): the fit draw
    # (260 cases) and the validation draw (120)"
    ("h200_efficienthalf_fit_seed2057.json", "fit", 2057, None, "eedc2c2"),
    ("h200_efficienthalf_validation_seed2057.json", "validation", 2057, None, "eedc2c2"),
    # a93c305: "data: the frozen seed-2057 test of the 16-bit memory-efficient kernel (...), measured on an H200 after
    # 9c41c4a (20:06) froze the model"
    ("h200_efficienthalf_test_seed2057.json", "test", 2057, "9c41c4a", "a93c305"),
    # 0bfe22d: "data: the frozen seed-2056 kernel test (issue 31), measured on an H200 from 19:29 UTC after e790865
    # (19:28) froze the model"
    ("h200_sdpafp32_test_seed2056.json", "test", 2056, "e790865", "0bfe22d"),
    ("h200_sdpa_test_seed2056.json", "test", 2056, "e790865", "0bfe22d"),
    ("h200_sample_test_seed2056.json", "test", 2056, "e790865", "0bfe22d"),
    # 9a5de08: "Data: issue 31's grouped and depthwise convs, a fit draw (480 cases) and a validation draw (200) of seed 2054";
    # c34c31f: "the seed-2054 grouped-conv fit draw goes into the neighbour bank only, not the fit" (role bank)
    ("h200_grouped_fit_seed2054.json", "bank", 2054, None, "9a5de08"),
    ("h200_grouped_validation_seed2054.json", "validation", 2054, None, "9a5de08"),
    # cdc84de: "The conv frozen test draw, seed 2052: 180 convs ... measured on an H200 after bf15e3e froze the model";
    # spent: the model it tested was not shipped (a choice made on it)
    ("h200_conv_test_seed2052.json", "spent", 2052, "bf15e3e", "cdc84de"),
    # 75cec87: "the weak families' fit (450) and validation (180) draws, seed 2050"
    ("h200_weak_fit_seed2050.json", "fit", 2050, None, "75cec87"),
    ("h200_weak_validation_seed2050.json", "validation", 2050, None, "75cec87"),
    # 420089c: "the frozen collectives test (seed 2036, 120 cases, after commit 615211b)"
    ("h200x2_collectives_test_seed2036.json", "test", 2036, "615211b", "420089c"),
    # f08f101 committed seed 2040's draw, "measured after e8e0d6a froze the launch counts", looked at to choose the probe's use
    ("h200_steps_test_seed2040.json", "spent", 2040, "e8e0d6a", "f08f101"),
    # 615211b: "the seed-2033 draw found it [link_misaligned] ... and is spent"; 96bd492 froze the model for seeds 2033/2034
    ("h200x2_collectives_test_seed2033.json", "spent", 2033, "96bd492", "615211b"),
    ("h200x2_parallel_steps_test_seed2034.json", "spent", 2034, "96bd492", "615211b"),
    # 7b26cea: "the frozen test draw of whole steps (seed 2029, 60 random steps measured after 98403b1 ...)", profiled since
    ("h200_steps_test_seed2029.json", "profiled", 2029, "98403b1", "7b26cea"),
    # b3ddb55: "The frozen test of captured programs' host rule: seed 2047 (70 H200 steps measured after 824f06f) ...";
    # c87414b: "the seed-2047 test is spent (its MoE misses led here) and joins the captured host fit"
    ("h200_captured_steps_test_seed2047.json", "fit", 2047, "824f06f", "b3ddb55"),
    # 83c606c: "The seed-2048 captured-steps draw: 70 H200 steps measured after c87414b froze capture and the captured
    # host rule (the frozen test of captured programs)"; spent on 2026-12-03 (its MoE misses led to op_host_weight) and
    # joins the captured host fit
    ("h200_captured_steps_test_seed2048.json", "fit", 2048, "c87414b", "83c606c"),
    # 09c3cf9: "the seed-2049 captured-steps draw's raw file (70 H200 steps measured after f26b086 with transformers
    # 5.24, the capture's version)"; spent on 2026-12-03 (its per-block probes chose ac3459d's reading)
    # then fitted on (ninth session): the captured host rule reads the draws that ran the capture's transformers
    ("h200_captured_steps_test_seed2049.json", "fit", 2049, "f26b086", "09c3cf9"),
    # 605e2c6: "The seed-2050 captured-steps draw's raw file (70 H200 steps measured after ac3459d ...)"
    # spent on 2026-12-03 (ninth session, its step-by-step misses read), then fitted on with seed 2049
    ("h200_captured_steps_test_seed2050.json", "fit", 2050, "ac3459d", "605e2c6"),
    # 836333f: "Data: seed 2050's 70 captured steps timed again on the H200 (...): the run-to-run spread" (no model frozen)
    ("h200_captured_steps_repeat_seed2050.json", "repeat", 2050, None, "836333f"),
    # 01ee359: "Data: the seed-2051 captured-steps draw's raw file (70 H200 steps measured after 6963ced froze capture and
    # the captured programs' host rule ...)"
    ("h200_captured_steps_test_seed2051.json", "test", 2051, "6963ced", "01ee359"),
    # a7baf54: "Data: the seed-2060 validation draw of captured steps (70 H200 steps, ... after 45474c3 ...)"
    ("h200_captured_steps_validation_seed2060.json", "validation", 2060, "45474c3", "a7baf54"),
    # 79a27af: "Data: the frozen seed-2052 test of captured programs (70 H200 steps, ... measured after 7f04e39 froze
    # capture, the host rule and the within-block probe reading ...)"
    ("h200_captured_steps_test_seed2052.json", "test", 2052, "7f04e39", "79a27af"),
    # 0daa1ea: "Serving (issue 30): the frozen seed-3005 draw (24 H200 generate calls measured after d525a14)";
    # 2047fe8: "seed 3005's probe-read diagnosis chose it" (the next draw's reading): spent
    ("h200_serving_test_seed3005.json", "spent", 3005, "d525a14", "0daa1ea"),
    # 9e4d8ef: "the frozen seed-3006 draw (15 H200 generate calls measured after 2047fe8 declared its reading ...)"
    ("h200_serving_test_seed3006.json", "test", 3006, "2047fe8", "9e4d8ef"),
    # 16aaa87: "Data: seed 3006's serving draw timed again on the H200 (...): the run-to-run spread" (no model frozen)
    ("h200_serving_repeat_seed3006.json", "repeat", 3006, None, "16aaa87"),
    # fa2dd09: "Data: the frozen seed-3007 serving draw (24 H200 generate calls, ... measured after ba73a3d ...)"
    ("h200_serving_test_seed3007.json", "test", 3007, "ba73a3d", "fa2dd09"),
    # 2d6dd6c: "Data: the frozen seed-3008 serving draw (16 H200 generate calls, ... measured after 2ce089f declared its
    # reading, --timed-probe ...)"
    ("h200_serving_test_seed3008.json", "test", 3008, "2ce089f", "2d6dd6c"),
    # a18b96e: "Issue 32: the frozen seed-3206 GEMM test (after f26b086)"; d18979d: "... seed 3206 ... spent" (its shapes
    # read for the diagnosis of the GEMM's top-1 misses)
    ("h200_tune_test_seed3206.json", "spent", 3206, "f26b086", "a18b96e"),
    # 39a79ed: "The frozen seed-3002 serving test ..."; 1fa5ee8: "seed 3002 spent"
    ("h200_serving_test_seed3002.json", "spent", 3002, "bc131bd", "39a79ed"),
    # 74fabd4: "Serving: the seed-3003 fit draw ... and the eager decode-step profile"
    ("h200_serving_fit_seed3003.json", "fit", 3003, None, "74fabd4"),
    # 1fa5ee8: "The frozen seed-3004 serving test (11 cases, measured after bc018d1)"
    ("h200_serving_test_seed3004.json", "test", 3004, "bc018d1", "1fa5ee8"),
    # d85d786: "The frozen test of solkit.tune on the H200: seed 3204 ..., measured after 3cc53f3 froze the model";
    # 2fcdce0: "Seed 3204 spent (its shapes chose this model's changes)"
    ("h200_tune_test_seed3204.json", "spent", 3204, "3cc53f3", "d85d786"),
    # 2fcdce0: "The frozen test of solkit.tune on the H200: seed 3205 ..., measured after 4b57715 froze the model";
    # spent on 2026-12-03 (read with seed 3206 for the GEMM's top-1 diagnosis, d18979d)
    ("h200_tune_test_seed3205.json", "spent", 3205, "4b57715", "2fcdce0"),
    # 919e6bb: "H200 measurements (310 cases), calibrated predictor ...": the catalogue, hand-picked (no seed)
    ("h200_measurements.json", "fit", None, None, "919e6bb"),
])
def test_facts_from_the_commit_log(name, role, seed, after, added):
    """Each file's role, seed, the commit it was measured after and the commit that added it, as the log says."""
    e = manifest().entry(name)
    assert (e.role, e.seed, e.after, e.added) == (role, seed, after, added)


def test_the_newest_frozen_test_of_each_family():
    """What every predictor change reports on: seed 2056 (kernels: the default mix, SDPA, fp32 SDPA), 2055 (issue 31's
    weak families),
    2062 (steps), 2036 (collectives), 2037 (2-GPU steps), 2052 (captured steps), 3008 (serving); none of the H200's
    Triton configs (3205 and 3206 spent on the GEMM's top-1 diagnosis; the H100's 3272); no cast test is frozen (seed 2028's is spent). On the
    H100, seed 2072 (the default mix, the weak families, SDPA, convs), the newest of any GPU."""
    m = manifest()
    h200 = "NVIDIA H200"
    assert m.newest_test("kernels", "sampled", gpu=h200).file == "h200_sample_test_seed2056.json"
    assert m.newest_test("kernels", "sdpa", gpu=h200).file == "h200_sdpa_test_seed2056.json"
    assert m.newest_test("kernels", "sdpa_fp32").file == "h200_sdpafp32_test_seed2056.json"
    assert m.newest_test("kernels", "efficient_half").file == "h200_efficienthalf_test_seed2057.json"
    assert m.newest_test("kernels", "weak", gpu=h200).file == "h200_weak_test_seed2055.json"
    for family, name in (("sampled", "sample"), ("weak", "weak"), ("sdpa", "sdpa"), ("conv", "conv")):
        assert m.newest_test("kernels", family).file == f"h100_{name}_test_seed2072.json"
        assert m.newest_test("kernels", family, gpu="NVIDIA H100 80GB HBM3").file == f"h100_{name}_test_seed2072.json"
    assert m.newest_test("steps").file == "h200_steps_test_seed2062.json"
    assert m.newest_test("collectives").file == "h200x2_collectives_test_seed2036.json"
    assert m.newest_test("parallel_steps").file == "h200x2_parallel_steps_test_seed2037.json"
    assert m.newest_test("captured_steps").file == "h200_captured_steps_test_seed2052.json"
    assert m.newest_test("serving").file == "h200_serving_test_seed3008.json"
    assert m.newest_test("tune_configs", gpu=h200) is None  # 3205 and 3206 spent on the GEMM's top-1 diagnosis
    assert m.newest_test("tune_configs").file == "h100_tune_test_seed3272.json"  # the H100's, after 56a7e6e
    assert m.newest_test("kernels", "cast") is None


def _own_record(name: str) -> dict:
    """(date, gpu, gpus, seed) as a JSON file records them: measure_h200.py's meta, steps.py's env, the comm scripts'
    environment and command."""
    raw = json.loads((DATA / name).read_text())
    if "meta" in raw and "gpu_name" in raw["meta"]:
        meta = raw["meta"]
        return {"date": meta["date_utc"], "gpu": meta["gpu_name"], "gpus": 1, "seed": meta["args"].get("sample_seed")}
    proto = raw.get("protocol")
    if isinstance(proto, dict) and proto.get("script") == "benchmarks/tune/measure_triton.py":  # its set's seed and date
        return {"date": proto["date_utc"], "gpu": raw["environment"]["gpu_name"], "gpus": 1,
                "seed": proto["seeds"][proto["role"]]}
    if "engines" in raw and "environment" in raw:  # benchmarks/serving/generate.py: its seed and GPU, no date
        return {"gpu": raw["environment"]["gpu"], "gpus": 1, "seed": raw["seed"]}
    if "families" in raw and "environment" in raw:  # benchmarks/serving/profile_decode.py: its GPU, no seed, no date
        return {"gpu": raw["environment"]["gpu"], "gpus": 1}
    if "in_process" in raw and "fresh" in raw:  # generate.py timed in one process and in fresh ones: the last run's date
        runs = [raw["in_process"], *raw["fresh"].values()]
        return {"date": max(r["created_utc"] for r in runs), "gpu": raw["in_process"]["environment"]["gpu"], "gpus": 1,
                "seed": raw["in_process"]["seed"]}
    command = raw.get("command") if isinstance(raw.get("command"), list) else []  # argv; a record's may be prose
    seed = int(command[command.index("--draw") + 1]) if "--draw" in command else None
    if "env" in raw and "gpu" in raw["env"]:
        return {"date": raw["created_utc"], "gpu": raw["env"]["gpu"], "gpus": 1, "seed": seed}
    if "environment" in raw:
        env = raw["environment"]
        return {"date": env["created_utc"], "gpu": env["gpus"][0], "gpus": len(env["gpus"]), "seed": seed}
    return {}


def test_dates_gpus_and_seeds_are_the_files_own():
    """Every measurement file that records when, on what and with which seed it ran agrees with its entry."""
    checked = 0
    for e in manifest().entries:
        if not e.file.endswith(".json") or "/" in e.file:
            continue
        own = _own_record(e.file)
        if own:
            assert {k: getattr(e, k) for k in own} == own, e.file
            checked += 1
    assert checked == 110  # 53 kernel files (13 the H100's) + 12 step files + 11 captured-step files + 5 collectives files + 5 split-step files
    # + 11 serving files (8 draws, 1 repeat, 1 decode profile, 1 process record) + 13 tune files (7 the H100's: 3 tests, 1 repeat, 3 validation draws)


def test_sampled_sets_roles_follow_the_sampler():
    """A kernel file's family is the sampler's (--sample-families) and its role fits its set: a sampled fit set is
    fitted, banked or a repeat; a validation set is validation; a test set is frozen or spent (or a repeat of one); the catalogue has no set."""
    families = {None: "sampled", "": "sampled", "sdpa": "sdpa", "cast": "cast", "conv2d,bmm": "conv2d+bmm",
                "weak": "weak", "conv_dense,conv_grouped": "conv", "conv_grouped": "conv_grouped",
                "sdpa_fp32": "sdpa_fp32", "efficient_half": "efficient_half"}
    allowed = {"fit": {"fit", "bank", "repeat"}, "validation": {"validation"}, "test": {"test", "spent", "repeat"}}
    for e in manifest().select(measures="kernels"):
        if e.role == "report":
            continue
        args = json.loads((DATA / e.file).read_text())["meta"]["args"]
        if args.get("sample"):
            assert e.family == families[args.get("sample_families")] and e.role in allowed[args["sample"]], e.file
        else:
            assert e.family == "catalogue", e.file


def test_a_test_draw_is_in_no_fit_and_not_in_the_bank():
    """No frozen test draw is read by a fit or built into the neighbour bank, and each names its freezing commit."""
    from solkit.calibration.__main__ import FIT_DATA
    from solkit.calibration.neighbours import BANK_DATA

    tests = manifest().select(role="test")
    assert len(tests) >= 6  # kernels x2, steps x2, collectives, 2-GPU steps
    assert all(not e.bank and not e.fits and e.after for e in tests)
    used = {Path(p).name for p in (*FIT_DATA, *BANK_DATA)}
    assert used.isdisjoint(e.file for e in tests)


def test_only_the_profiler_traces_stay_out_of_the_wheel():
    """shipped: false exactly for data/profiles, which pyproject's wheel excludes."""
    kept_out = {e.file for e in manifest().entries if not e.shipped}
    assert kept_out == {e.file for e in manifest().entries if e.file.startswith("profiles/")}
    assert len(kept_out) == 28  # 8 files in profiles/ + 7 in profiles/steps + 7 in profiles/captured + 6 in profiles/parallel
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"/data/profiles"' in pyproject and '"data" = "solkit/data"' in pyproject


def test_every_role_is_defined_in_the_header():
    """The file's header defines each role of the vocabulary."""
    header = (DATA / MANIFEST_NAME).read_text().split("\nprotocols:")[0]
    for role in ROLES:
        assert f"#     {role} " in header, role


def _folder(tmp_path: Path, entries: list, planned: list = (), files=("a.json", "b.json")) -> Path:
    """A data folder of small files and a manifest of ``entries``."""
    for name in files:
        (tmp_path / name).write_text("{}")
    path = tmp_path / MANIFEST_NAME
    path.write_text(yaml.safe_dump({"protocols": {"p": "a script"}, "files": entries, "planned": list(planned)}))
    return path


GOOD = [{"file": "a.json", "role": "fit", "measures": "kernels", "fits": ["kernels"], "protocol": "p"},
        {"file": "b.json", "role": "test", "measures": "kernels", "after": "2e97ee8", "date": "2026-12-01T06:07:52"}]


@pytest.mark.parametrize("change, words", [
    (lambda e, p: e[1].update(role="frozen"), "entry 'b.json', field 'role'"),
    (lambda e, p: e[1].update(bank=True), "entry 'b.json', field 'bank': a frozen test draw is never in the neighbour bank"),
    (lambda e, p: e[1].pop("after"), "entry 'b.json', field 'after'"),
    (lambda e, p: e[1].pop("date"), "entry 'b.json', field 'date': a test draw names when it was measured"),
    (lambda e, p: e[1].update(role="spent", date=None), "entry 'b.json', field 'date': a spent draw names when"),
    (lambda e, p: e[1].update(fits=["kernels"]), "entry 'b.json', field 'fits'"),
    (lambda e, p: e[0].pop("fits"), "entry 'a.json', field 'fits'"),
    (lambda e, p: e[0].update(fits=["everything"]), "entry 'a.json', field 'fits.0'"),
    (lambda e, p: e[1].update(after="HEAD~3"), "entry 'b.json', field 'after': expected a commit hash"),
    (lambda e, p: e[0].update(protocol="q"), "entry 'a.json', field 'protocol'"),
    (lambda e, p: e[0].update(date="yesterday"), "entry 'a.json', field 'date'"),
    (lambda e, p: e[0].update(colour="red"), "entry 'a.json', field 'colour'"),
    (lambda e, p: e[0].update(shipped=False), "entry 'a.json', field 'shipped'"),
    (lambda e, p: e.append(dict(e[0])), "entry 'a.json', field 'file': named twice"),
    (lambda e, p: e.append({"file": "c.json", "role": "record", "measures": "host"}), "entry 'c.json', field 'file': no such file"),
    (lambda e, p: p.append({"file": "a.json", "role": "fit", "measures": "collectives", "fits": ["link_hop"]}),
     "named twice"),
    (lambda e, p: p.append({"file": "c.json", "role": "fit", "measures": "collectives"}), "planned entry 'c.json', field 'fits'"),
])
def test_a_bad_manifest_names_the_file_and_the_field(tmp_path, change, words):
    """Each broken rule is a SpecError (a ValueError) naming the manifest, the entry and the field."""
    entries = [dict(e) for e in GOOD]
    planned: list = []
    load_manifest(_folder(tmp_path, entries))  # whole, it loads
    change(entries, planned)
    path = _folder(tmp_path, entries, planned)
    with pytest.raises(SpecError, match=words.replace("(", r"\(").replace(".", r"\.")) as info:
        load_manifest(path)
    assert str(path) in str(info.value) and isinstance(info.value, ValueError)


def test_a_file_the_manifest_does_not_name_is_refused_by_check_folder_only(tmp_path):
    """A stray file (b.json unlisted, a .DS_Store, an editor's backup in a subfolder) does not stop the loader, which
    checks only what it reads; check_folder refuses them, naming each, and passes once every file is named."""
    path = _folder(tmp_path, [dict(GOOD[0])])
    (tmp_path / ".DS_Store").write_bytes(b"")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "a.json~").write_text("{}")
    assert [e.file for e in load_manifest(path).entries] == ["a.json"]
    with pytest.raises(SpecError, match=r"field 'files': 3 file\(s\) of .* not in the manifest: \.DS_Store, b\.json, "
                                        r"profiles/a\.json~$") as info:
        check_folder(path)
    assert str(path) in str(info.value)
    for name in (".DS_Store", "profiles/a.json~"):
        (tmp_path / name).unlink()
    assert [e.file for e in check_folder(_folder(tmp_path, [dict(e) for e in GOOD])).entries] == ["a.json", "b.json"]


def test_a_role_the_manifest_lacks_is_a_spec_error_naming_it(tmp_path):
    """Asking for the first file of a role no entry has names the role and the fit (no IndexError); the committed
    manifest has no 4- or 8-GPU collectives grid yet (link_hop's files are planned)."""
    with pytest.raises(SpecError, match=r"no file with role='fit', fits='link_hop'") as info:
        manifest().first(role="fit", fits="link_hop")
    assert isinstance(info.value, ValueError) and MANIFEST_NAME in str(info.value)
    small = load_manifest(_folder(tmp_path, [dict(e) for e in GOOD]))
    assert small.first(role="test").file == "b.json"
    with pytest.raises(SpecError, match=r"no file with role='validation', measures='collectives'"):
        small.first(role="validation", measures="collectives")


@pytest.mark.parametrize("fields, text", [
    ({"seed": 2033, "after": "96bd492", "note": "before link_misaligned existed: then 16.5% / 60.3%"},
     "seed 2033, measured after commit 96bd492; before link_misaligned existed: then 16.5% / 60.3%"),
    ({"seed": 2037, "after": "615211b"}, "seed 2037, measured after commit 615211b"),
    ({"note": "a record"}, "a record"),
    ({}, ""),
])
def test_describe_joins_the_facts_and_the_note_with_one_separator(fields, text):
    """What a report's heading says of a file: seed and commit, then the note after '; ' (a note's own colon stays the
    only one)."""
    assert DataFile(file="x.json", role="spent", measures="collectives", **fields).describe() == text


def test_a_planned_file_that_exists_must_move_to_files(tmp_path):
    """A planned measurement whose file is committed is refused until its entry moves to 'files'."""
    planned = [{"file": "c.json", "role": "fit", "measures": "collectives", "fits": ["link_hop"]}]
    assert load_manifest(_folder(tmp_path, [dict(e) for e in GOOD], planned)).planned[0].file == "c.json"
    with pytest.raises(SpecError, match="planned entry 'c.json', field 'file': the file exists now"):
        load_manifest(_folder(tmp_path, [dict(e) for e in GOOD], planned, files=("a.json", "b.json", "c.json")))


def test_a_missing_or_broken_manifest_is_a_spec_error(tmp_path):
    """No manifest, bad YAML, or a list at the top: each a SpecError naming the file."""
    with pytest.raises(SpecError, match="no data manifest"):
        load_manifest(tmp_path / MANIFEST_NAME)
    (tmp_path / MANIFEST_NAME).write_text("files: [")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_manifest(tmp_path / MANIFEST_NAME)
    (tmp_path / MANIFEST_NAME).write_text("- a.json\n")
    with pytest.raises(SpecError, match="expected a mapping"):
        load_manifest(tmp_path / MANIFEST_NAME)


@pytest.mark.parametrize("where, words", [({"role": "frozen"}, "role must be one of fit, bank"),
                                          ({"colour": "red"}, "manifest field must be one of file, role"),
                                          ({"fits": "all"}, "fits must be one of kernels")])
def test_a_bad_query_is_an_option_error(where, words):
    """Asking for an unknown role, field or fit names it (OptionError, a ValueError)."""
    with pytest.raises(OptionError, match=words) as info:
        manifest().files(**where)
    assert isinstance(info.value, SolkitError) and isinstance(info.value, ValueError)
    with pytest.raises(OptionError, match="'nothing.json' is not in the data manifest"):
        manifest().entry("nothing.json")


def test_importing_the_calibration_reads_no_data(tmp_path):
    """Every calibration module imports and ``--help`` prints with the data folder pointed at an empty one (no file list
    is read at import, no default at parse time); the first list asked for then names the missing manifest."""
    code = f"""
import importlib
from pathlib import Path
m = importlib.import_module("solkit.calibration.manifest")  # the package's own attribute of that name is the function
m.data_dir = lambda: Path({str(tmp_path)!r})
import solkit.calibration
from solkit.calibration import __main__, collectives, fitting, neighbours, parallel, programs
from solkit.errors import SpecError
try:
    __main__.main(["report", "--help"])
except SystemExit as exit:
    print("help exit", exit.code)
for module, name in ((programs, "STEP_FIT_DATA"), (parallel, "PARALLEL_FIT_DATA"), (collectives, "COMM_FIT_DATA"),
                     (neighbours, "BANK_DATA"), (__main__, "FIT_DATA")):
    try:
        getattr(module, name)
    except SpecError as exc:
        print(name, "refused:", "no data manifest" in str(exc))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "usage: python -m solkit.calibration report" in lines[0] and "help exit 0" in lines
    assert lines[-5:] == [f"{name} refused: True" for name in ("STEP_FIT_DATA", "PARALLEL_FIT_DATA", "COMM_FIT_DATA",
                                                                "BANK_DATA", "FIT_DATA")]


def test_a_stray_file_in_the_data_folder_stops_no_command(tmp_path, tmp_path_factory, monkeypatch, capsys):
    """The data folder with a .DS_Store and an editor's backup beside the committed files (links to them): the file
    lists read as before, ``--help`` prints, a command runs; check_folder alone names the strays."""
    import importlib

    from solkit.calibration import __main__ as cli, programs

    manifest_module = importlib.import_module("solkit.calibration.manifest")  # the package's own name is the function

    for name in [e.file for e in manifest().entries if (DATA / e.file).exists()] + [MANIFEST_NAME]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).symlink_to(DATA / name)
    (tmp_path / ".DS_Store").write_bytes(b"")
    (tmp_path / "h200_validation.md~").write_text("an editor's backup")
    before = programs.STEP_FIT_DATA
    monkeypatch.setattr(manifest_module, "data_dir", lambda: tmp_path)
    manifest.cache_clear()
    try:
        assert programs.STEP_FIT_DATA == before and manifest().entries == load_manifest(DATA / MANIFEST_NAME).entries
        with pytest.raises(SystemExit) as info:
            cli.main(["--help"])
        assert info.value.code == 0 and "usage: python -m solkit.calibration" in capsys.readouterr().out
        monkeypatch.chdir(tmp_path)
        out = tmp_path_factory.mktemp("out") / "collectives.md"
        assert cli.main(["collectives", "--out", str(out)]) == 0
        assert out.read_text().startswith("# NCCL collectives on H200s")
        with pytest.raises(SpecError, match=r"2 file\(s\) of .* not in the manifest: \.DS_Store, h200_validation\.md~$"):
            check_folder()
    finally:
        manifest.cache_clear()  # the next caller reads the real folder again
