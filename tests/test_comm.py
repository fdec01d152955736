"""Collectives (``solkit.comm``), systems (``sk.load_system``) and the link roof: counts by hand in named dimensions."""

from __future__ import annotations

import numpy as np
import pytest

import solkit as sk
from solkit import comm
from solkit.errors import ArgumentTypeError, OptionError, ShapeError, SolkitError, UnknownGPUError
from solkit.hardware.system import default_system
from solkit.prediction import calibration

GIB = 2**30


def _link(w):
    return w.counted[0][0].link


@pytest.mark.parametrize("op, factor, steps", [
    ("all_reduce", 2 * 7 / 8, 14),      # 2(n-1)/n, 2(n-1) ring steps
    ("all_gather", 7 / 8, 7),           # (n-1)/n
    ("reduce_scatter", 7 / 8, 7),
    ("all_to_all", 7 / 8, 1),           # every peer at once
    ("broadcast", 1.0, 7),              # a pipelined chain
    ("send_recv", 1.0, 1),
])
def test_bus_bytes_and_steps_follow_nccl_tests_factors(op, factor, steps):
    """n = 8, nbytes = 1 GiB: bus bytes = nbytes x nccl-tests' bus factor; the ring's steps in a row."""
    link = _link(comm.collective(op, GIB, 8))
    assert link.bus_bytes == pytest.approx(factor * GIB)  # e.g. all_reduce 1.75 x 1,073,741,824 = 1,879,048,192
    assert link.steps == steps and link.n_gpus == 8 and link.nbytes == GIB
    assert comm.bus_factor(op, 8) == pytest.approx(factor)


def test_dram_bytes_and_reduction_flops_by_hand():
    """Per GPU, n = 4, 1 GiB bf16: all_reduce reads and writes 1 GiB and adds 3/4 of 2**29 elements; all_gather reads 1/4."""
    k = comm.all_reduce(GIB, 4).counted[0][0]
    assert (k.bytes_read, k.bytes_written) == (GIB, GIB)
    assert k.vector_flops == pytest.approx(3 / 4 * GIB / 2)  # 402,653,184 adds of bf16 elements
    assert k.model_flops == 0 and k.kind == "collective"
    g = comm.all_gather(GIB, 4).counted[0][0]
    assert (g.bytes_read, g.bytes_written, g.vector_flops) == (GIB / 4, GIB, 0.0)
    rs = comm.reduce_scatter(GIB, 4, dtype="fp32").counted[0][0]
    assert (rs.bytes_read, rs.bytes_written) == (GIB, GIB / 4)
    assert rs.vector_flops == pytest.approx(3 / 4 * GIB / 4)  # fp32: 2**28 elements, 3/4 of them added
    assert comm.broadcast(GIB, 4).counted[0][0].bytes_read == 0


def test_systems_ship_sourced_link_figures_per_direction():
    """hgx-h200: NVLink 900 GB/s total -> 450 GB/s per direction; 8 x 400 Gb/s NICs / 8 GPUs = 50 GB/s per GPU."""
    assert sk.list_systems() == ["dgx-a100", "dgx-b200", "hgx-h100", "hgx-h200"]
    h200 = sk.load_system("hgx-h200", nodes=16)
    assert h200.n_gpus == 128 and h200.gpu == "h200-sxm" and h200.nodes == 16
    assert h200.link_bandwidth == 450e9  # 900e9 / 2
    assert h200.network_bandwidth == 50e9  # 8 x 400e9 / 8 (bits) / 8 GPUs
    a100 = sk.load_system("DGX-A100")
    assert a100.network_bandwidth == 25e9  # 8 x 200e9 / 8 / 8
    assert sk.load_system("dgx-h200").name == "hgx-h200"  # an alias
    for name in sk.list_systems():
        system = sk.load_system(name)
        assert system.intra_node.source in {s.id for s in system.sources}
        assert system.gpu_spec.name == system.gpu


def test_a_gpu_alone_is_one_node_of_its_usual_system():
    """DESIGN: a plain GPU means one node of its usual system (8 on NVSwitch for SXM parts)."""
    assert default_system("h200").name == "hgx-h200"
    pcie = default_system("l40s")  # no NVLink: 8 GPUs on PCIe Gen4 x16, 64 GB/s both ways
    assert pcie.intra_node.topology == "pcie" and pcie.gpus_per_node == 8 and pcie.link_bandwidth == 32e9
    bridge = default_system("h100-nvl")  # an NVLink bridge joins a pair: 600 GB/s -> 300 GB/s each way
    assert bridge.gpus_per_node == 2 and bridge.link_bandwidth == 300e9
    assert default_system("h200-nvl").gpus_per_node == 4  # "2- or 4-way" bridge


def test_roofline_of_an_all_reduce_inside_a_node():
    """1 GiB over 8 H200s: 2 x 7/8 x 2**30 = 1,879,048,192 B / 450e9 B/s = 4.1757 ms, link-bound."""
    r = sk.roofline(comm.all_reduce(GIB, 8), "h200")
    assert r.t_link == pytest.approx(1_879_048_192 / 450e9)  # 4.17566e-3 s
    assert r.t_sol == pytest.approx(r.t_link) and r.bound == "link" and r.kernels[0].bound == "link"
    assert r.bytes == 2 * GIB  # the DRAM bytes stay the GPU's own reads and writes, apart from the links


def test_roofline_across_nodes_takes_the_slower_level():
    """16 H200s on 2 nodes: each GPU sends 1/8 of its 2 x 15/16 GiB over the network (50 GB/s) and 7/8 over NVLink."""
    bus = 2 * 15 / 16 * GIB  # 2,013,265,920 B
    r = sk.roofline(comm.all_reduce(GIB, 16), sk.load_system("hgx-h200", nodes=2))
    network = bus / 8 / 50e9  # 251,658,240 B / 50e9 = 5.0332 ms
    nvlink = bus * 7 / 8 / 450e9  # 1,761,607,680 B / 450e9 = 3.9147 ms
    assert r.t_link == pytest.approx(max(network, nvlink)) and r.t_link == pytest.approx(5.0331648e-3)
    # a data-parallel pair beside tp = 8 (stride 8) has one GPU per node: everything crosses the network
    pair = sk.roofline(comm.all_reduce(GIB, 2, stride=8), sk.load_system("hgx-h200", nodes=2))
    assert pair.t_link == pytest.approx(GIB / 50e9)  # 2 x 1/2 x 2**30 B = 1 GiB at 50 GB/s = 21.47 ms
    # an all-to-all sends nbytes/n to each peer: 8 of the 15 peers sit on the other node
    a2a = comm.all_to_all(GIB, 16).counted[0][0].link
    intra, inter = a2a.level_bytes(8)
    assert inter == pytest.approx(GIB * 8 / 16) and intra == pytest.approx(GIB * 7 / 16)


def test_tree_all_reduce_steps_by_hand():
    """NCCL's tree over 4 nodes of 8: 2 x (8 - 1 + log2(4)) = 18 steps; inside one node it is the ring's 2(n-1)."""
    link = _link(comm.all_reduce(GIB, 32, algorithm="tree"))
    assert link.hops(8) == 18.0
    assert _link(comm.all_reduce(GIB, 8, algorithm="tree")).hops(8) == 14.0


def test_sweeps_broadcast_over_sizes_and_gpu_counts():
    """nbytes and n_gpus take arrays: T_SOL per element, 2(n-1)/n x nbytes / 450e9."""
    sizes = np.array([2**20, 2**30])
    n = np.array([2, 8])
    r = sk.roofline(comm.all_reduce(sizes, n), "h200")
    expected = np.array([2 * 1 / 2 * 2**20, 2 * 7 / 8 * 2**30]) / 450e9
    assert np.allclose(r.t_link, expected) and list(r.bound) == ["link", "link"]


def test_predict_a_collective_is_latency_plus_bytes_over_achieved_bandwidth():
    """predict = launch floor + link_latency + extra hops x link_hop + bus bytes / (link_efficiency x 450 GB/s), >= T_SOL."""
    cal = calibration(sk.load_gpu("h200"))
    eff = cal.link_efficiency.get("all_gather", 1.0)
    latency = cal.link_latency.get("all_gather", 0.0)
    p = sk.predict(comm.all_gather(GIB, 8), "h200")
    expected = latency + (7 - 1) * cal.link_hop + 7 / 8 * GIB / (eff * 450e9)  # 7 ring steps, 1 of them in a pair's
    assert p.seconds == pytest.approx(max(cal.launch_floor + expected, 7 / 8 * GIB / 450e9))
    assert p.seconds >= p.t_sol and p.kernels[0].limiter == "link"
    assert sk.predict(comm.all_reduce(GIB, 1), "h200").kernel_seconds == 0  # one GPU: nothing to move


@pytest.mark.parametrize("call, error, words", [
    (lambda: comm.collective("allreduce", GIB), OptionError, "op must be one of"),
    (lambda: comm.all_reduce(-1, 8), ShapeError, "nbytes"),
    (lambda: comm.all_reduce(GIB, 0), ShapeError, "n_gpus"),
    (lambda: comm.all_reduce(GIB, 8, algorithm="tree_ring"), OptionError, "algorithm"),
    (lambda: comm.collective("all_gather", GIB, 8, algorithm="tree"), ShapeError, "all_reduce only"),
    (lambda: comm.all_reduce(GIB, 8, stride=np.array([1, 2])), ShapeError, "stride"),
    (lambda: comm.collective("all_reduce", GIB, 8, overlap="sometimes"), OptionError, "overlap"),
    (lambda: sk.roofline(comm.all_reduce(GIB, 16), "h200"), ShapeError, "n_gpus=16 is more GPUs"),
    (lambda: sk.load_system("hgx-h900"), UnknownGPUError, "not a known system"),
    (lambda: sk.load_system("hgx-h200", nodes=0), ShapeError, "nodes"),
    (lambda: sk.load_system(3), ArgumentTypeError, "system must be"),
])
def test_bad_input_names_the_argument(call, error, words):
    """Each mistake is a SolkitError that also inherits the builtin, naming what was wrong."""
    with pytest.raises(error, match=words) as info:
        call()
    assert isinstance(info.value, SolkitError)


def test_a_system_inline_and_its_checks():
    """A mapping loads like a file; a source id must be listed; nodes > 1 needs a network."""
    spec = {"name": "lab-pair", "full_name": "two H200 on a bridge", "gpu": "h200-sxm", "gpus_per_node": 2,
            "intra_node": {"name": "bridge", "topology": "bridge", "bandwidth_gb_s": 400.0, "source": "s"},
            "sources": [{"id": "s", "title": "lab notes", "url": "https://example.org"}]}
    pair = sk.load_system(spec)
    assert pair.link_bandwidth == 200e9 and pair.network_bandwidth == 0.0
    assert sk.roofline(comm.send_recv(2**30, 2), pair).t_link == pytest.approx(2**30 / 200e9)
    with pytest.raises(SolkitError, match="network"):
        sk.load_system(spec, nodes=2)
    with pytest.raises(SolkitError, match="not among the sources"):
        sk.load_system({**spec, "intra_node": {**spec["intra_node"], "source": "other"}})


def test_link_fit_recovers_known_parameters_from_synthetic_cases(tmp_path):
    """Cases made with latency 20 us and efficiency 0.8 (all_reduce, 2 GPUs, 4 KiB to 1 GiB): the fit finds both."""
    import json

    from solkit.calibration.collectives import fit_links, load_collectives

    floor = calibration(sk.load_gpu("h200")).launch_floor
    cases = []
    for exponent in range(12, 31, 2):  # 4 KiB .. 1 GiB
        nbytes = 2**exponent
        seconds = floor + 20e-6 + 2 * 1 / 2 * nbytes / (0.8 * 450e9)  # bus bytes = nbytes on 2 GPUs
        cases.append({"op": "all_reduce", "dtype": "bf16", "nbytes": nbytes, "n_gpus": 2, "seconds": seconds})
    cases.append({"op": "all_reduce", "dtype": "bf16", "nbytes": 8, "n_gpus": 2, "error": "skipped (budget)"})
    path = tmp_path / "collectives.json"
    path.write_text(json.dumps({"environment": {}, "cases": cases}))
    loaded = load_collectives(path)
    assert len(loaded) == 10  # the skipped case is left out
    fitted = fit_links(loaded)
    assert fitted["link_latency"]["all_reduce"] == pytest.approx(20e-6)
    assert fitted["link_efficiency"]["all_reduce"] == pytest.approx(0.8)
    assert "all_gather" not in fitted["link_latency"]  # no cases, no entry


def test_a_chunk_off_16_byte_alignment_runs_at_the_misaligned_efficiency():
    """all_gather on 2 GPUs: 1 GiB (chunk 2**29) at link_efficiency, 1 GiB + 16 (chunk 2**29 + 8) at x link_misaligned."""
    cal = calibration(sk.load_gpu("h200"))
    eff, lat, mis = cal.link_efficiency["all_gather"], cal.link_latency["all_gather"], cal.link_misaligned["all_gather"]
    assert mis < 1.0 and "all_reduce" not in cal.link_misaligned
    aligned = sk.predict(comm.all_gather(GIB, 2), "h200").seconds
    off = sk.predict(comm.all_gather(GIB + 16, 2), "h200").seconds
    assert aligned == pytest.approx(cal.launch_floor + lat + GIB / 2 / (eff * 450e9))
    assert off == pytest.approx(cal.launch_floor + lat + (GIB + 16) / 2 / (eff * mis * 450e9))
    both = sk.predict(comm.all_gather(np.array([GIB, GIB + 16]), 2), "h200").seconds
    assert both == pytest.approx([aligned, off])
    # n_gpus as an array: GIB + 16 over 4 GPUs, chunk 2**28 + 4 (misaligned); over 1 GPU nothing moves
    four = sk.predict(comm.all_gather(GIB + 16, 4), "h200").seconds
    assert sk.predict(comm.all_gather(GIB + 16, np.array([2, 4])), "h200").seconds == pytest.approx([off, four])
    assert four > sk.predict(comm.all_gather(GIB, 4), "h200").seconds
    assert sk.predict(comm.all_gather(GIB + 16, 1), "h200").kernel_seconds == 0
    # below MISALIGNED_FROM = 16 MiB no penalty: 8 MiB + 16 bytes at the aligned efficiency
    small = 2**23 + 16
    assert sk.predict(comm.all_gather(small, 2), "h200").seconds == pytest.approx(
        cal.launch_floor + lat + small / 2 / (eff * 450e9))
    r_lat, r_eff = cal.link_latency["all_reduce"], cal.link_efficiency["all_reduce"]
    # all_reduce of 1 GiB + 16 on 2 GPUs: bus bytes 2 x 1/2 x nbytes = nbytes
    assert sk.predict(comm.all_reduce(GIB + 16, 2), "h200").seconds == pytest.approx(
        cal.launch_floor + r_lat + (GIB + 16) / (r_eff * 450e9))


def test_misaligned_fit_recovers_a_known_factor():
    """Synthetic all_gathers (20 us, efficiency 0.8, misaligned factor 0.6, 2**k + 16 bytes): the fit finds 0.6."""
    from solkit.calibration.collectives import CollectiveCase, fit_misaligned

    floor = calibration(sk.load_gpu("h200")).launch_floor
    links = {"link_latency": {"all_gather": 20e-6}, "link_efficiency": {"all_gather": 0.8}}
    cases = [CollectiveCase("all_gather", "bf16", 2.0**k + 16, 2, floor + 20e-6 + (2**k + 16) / 2 / (0.8 * 0.6 * 450e9))
             for k in range(24, 33, 2)]  # 16 MiB .. 4 GiB: where the factor applies
    assert fit_misaligned(cases, links) == {"all_gather": pytest.approx(0.6)}
    aligned = [c._replace(nbytes=2.0**20 * (i + 1) * 16) for i, c in enumerate(cases)]
    assert fit_misaligned(aligned, links) == {} and fit_misaligned(cases[:2], links) == {}


def test_steps_at_two_names_a_bad_collective():
    """A public helper: an unknown collective is an OptionError listing the six."""
    assert comm.steps_at_two("all_reduce") == 2.0 and comm.steps_at_two("all_gather") == 1.0  # 2(n-1), n-1 at n = 2
    with pytest.raises(OptionError, match="collective must be one of"):
        comm.steps_at_two("x")


def test_steps_that_cross_nodes_by_hand():
    """A ring all-reduce over 4 nodes of 8 crosses a node boundary 4 times per pass, 2 passes: 8 of its 62 steps."""
    link = _link(comm.all_reduce(GIB, 32))
    assert link.steps == 62 and link.network_hops(8) == 8  # 2 x (32 - 1) steps; 2 x 4 crossings
    assert _link(comm.all_gather(GIB, 32)).network_hops(8) == 4
    assert _link(comm.all_reduce(GIB, 32, algorithm="tree")).network_hops(8) == 4  # 2 x log2(4)
    assert _link(comm.all_reduce(GIB, 8)).network_hops(8) == 0  # one node
    assert _link(comm.send_recv(GIB, 2, stride=8)).network_hops(8) == 1


@pytest.mark.parametrize("name, default_n", [("all_reduce", 8), ("all_gather", 8), ("reduce_scatter", 8),
                                             ("all_to_all", 8), ("broadcast", 8), ("send_recv", 2)])
def test_each_collective_defaults_names_and_placement(name, default_n):
    """DESIGN's defaults (8 GPUs; a send/recv pair), the workload named after its collective, stride passed through."""
    function = getattr(comm, name)
    w = function(GIB)
    link = _link(w)
    assert link.n_gpus == default_n and link.collective == name and w.name == name and w.counted[0][0].precision == "bf16"
    assert comm.collective(name, GIB).counted[0][0].link.n_gpus == 8
    assert _link(function(GIB, 4, "fp32", stride=2)).stride == 2.0
    assert function(GIB, 4, "fp32").counted[0][0].precision == "fp32"


@pytest.mark.parametrize("call, words", [
    (lambda: comm.bus_factor("x", 8), "collective must be one of"),
    (lambda: comm.all_reduce("big"), "nbytes"),
    (lambda: comm.all_reduce(GIB, 2.5), "n_gpus"),
    (lambda: comm.all_reduce(GIB, 8, "bf17"), "dtype"),
    (lambda: comm.all_reduce(GIB, 8, stride=0), "stride"),
    (lambda: comm.all_reduce(GIB, 8, stride=np.array([1, 2])), r"stride must be one positive integer, got an array of shape \(2,\)"),
    (lambda: comm.all_reduce(GIB, 8, algorithm="bus"), "algorithm must be one of"),
    (lambda: comm.collective("all_reduce", GIB, overlap="side"), "overlap must be one of"),
])
def test_every_argument_is_named_in_its_error(call, words):
    """A bad argument's error names that argument (and, for a choice, what it takes)."""
    with pytest.raises(SolkitError, match=words):
        call()


def test_frozen_collectives_test_within_the_goal():
    """The seed-2036 draw (120 random collectives on 2 H200s, measured after commit 615211b froze the model): median
    error within issue 14's goals, 10% at 1 MiB and more (4.6% when committed) and 25% below (15.3%)."""
    from solkit.calibration.collectives import COMM_TEST_DATA, LARGE, collective_errors, load_collectives

    assert COMM_TEST_DATA == ("h200x2_collectives_test_seed2036.json",)
    rows = collective_errors(load_collectives(COMM_TEST_DATA[0]))
    large = [e for c, _, e in rows if c.nbytes >= LARGE]
    small = [e for c, _, e in rows if c.nbytes < LARGE]
    assert len(large) >= 60 and len(small) >= 40
    assert np.median(large) <= 0.10 and np.median(small) <= 0.25


def test_link_parameters_are_the_fit_of_the_committed_files():
    """The spec's link_* tables are fit_links of the grid and fit_misaligned of the misaligned grid, as written."""
    from solkit.calibration.collectives import link_parameters

    cal = calibration(sk.load_gpu("h200"))
    fitted = link_parameters()
    for name in ("link_latency", "link_efficiency", "link_misaligned"):
        assert dict(getattr(cal, name)) == pytest.approx(fitted[name]), name
    assert set(cal.link_misaligned) == {"all_gather", "all_to_all", "reduce_scatter"}


def test_hop_fit_recovers_a_known_hop_from_4_and_8_gpu_cases():
    """Synthetic 4- and 8-GPU all_reduces and all_gathers (20 us, efficiency 0.8, hop 2.5 us): fit_hops finds 2.5 us."""
    from solkit.calibration.collectives import CollectiveCase, fit_hops

    floor = calibration(sk.load_gpu("h200")).launch_floor
    links = {"link_latency": {"all_reduce": 20e-6, "all_gather": 20e-6},
             "link_efficiency": {"all_reduce": 0.8, "all_gather": 0.8}, "link_misaligned": {}}
    cases = []
    for n in (4, 8):
        for nbytes in (2.0**20, 2.0**26, 2.0**30):
            # all_reduce: 2(n-1) - 2 extra steps; all_gather: (n-1) - 1
            cases.append(CollectiveCase("all_reduce", "bf16", nbytes, n, floor + 20e-6 + (2 * (n - 1) - 2) * 2.5e-6
                                        + 2 * (n - 1) / n * nbytes / (0.8 * 450e9)))
            cases.append(CollectiveCase("all_gather", "bf16", nbytes, n, floor + 20e-6 + (n - 2) * 2.5e-6
                                        + (n - 1) / n * nbytes / (0.8 * 450e9)))
    assert fit_hops(cases, links) == pytest.approx(2.5e-6)
    assert fit_hops([c._replace(n_gpus=2) for c in cases], links) is None
