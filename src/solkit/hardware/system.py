"""Systems: GPUs per node, the links inside a node and the network between nodes (``hardware_specs/systems/*.yaml``).

A system file names its GPU (a spec in ``hardware_specs/``), how many sit in a node, the intra-node link
(NVLink through NVSwitch, a bridge, or PCIe) with its cited total per-GPU bandwidth, and the network: the
compute NICs per node and their per-direction line rate. Python exposes per-direction figures in bytes/s:

    link_bandwidth    = intra-node bandwidth_gb_s / 2 * 1e9      (a cited NVLink total counts both directions)
    network_bandwidth = nics_per_node * nic_gbit_s * 1e9 / 8 / gpus_per_node   (per GPU, one direction)

``load_system(name, nodes=)`` reads the shipped folder (and ``spec_path`` / ``$SOLKIT_SPEC_PATH`` folders'
``systems/``); a mapping or a ``System`` works inline. ``default_system(gpu)`` is one node of the GPU's usual
system: the shipped system built around it, else a node made from its spec's interconnect (NVLink-bridged
parts: the bridged pair or quad; SXM/OAM parts: 8 on their links; parts without NVLink: 8 GPUs on PCIe).
NB: a built node treats every pair as joined at the part's full link rate (true through NVSwitch; a
fully connected mesh such as MI300X's gives a pair one of its seven links), so its bound is loose there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import Field

from .._validate import checked_call, whole
from ..errors import ArgumentTypeError, SpecError, UnknownGPUError
from .loader import read_spec_bytes, stat_spec, as_gpu, document, load_gpu, spec_dirs
from .records import GIGA, Count, Figure, Source, SpecModel

__all__ = ["System", "IntraNode", "Network", "load_system", "list_systems", "as_system", "default_system", "SYSTEMS_DIR"]

#: the folder of system files inside each spec folder
SYSTEMS_DIR = "systems"

#: GPUs an NVLink bridge joins, by the spec's interconnect name (``h200-nvl``: "2- or 4-way"): the largest
_BRIDGE_GROUP = {"2 GPUs": 2, "4-way": 4}
#: a node of PCIe-only GPUs, or of SXM/OAM parts, when no system file says otherwise
_PCIE_NODE = 8
_SWITCH_NODE = 8


class IntraNode(SpecModel):
    """The links between the GPUs of one node, with the cited total (both directions) per GPU."""

    name: str
    topology: Literal["switch", "bridge", "pcie"]
    bandwidth_gb_s: Figure
    source: str


class Network(SpecModel):
    """The compute network between nodes: NICs per node and each NIC's per-direction line rate in Gb/s."""

    name: str
    nics_per_node: Count
    nic_gbit_s: Figure
    source: str


class System(SpecModel):
    """Nodes of identical GPUs: the GPU, GPUs per node, the intra-node link, the network, and how many nodes."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]*$")
    full_name: str
    aliases: tuple[str, ...] = ()
    gpu: str
    gpus_per_node: Count
    intra_node: IntraNode
    network: Union[Network, None] = None
    nodes: Count = 1
    sources: tuple[Source, ...] = ()
    notes: Union[str, None] = None

    def _checked(self, context: Any) -> "System":
        where = self._where(context) if context else f"system {self.name!r}"
        ids = {s.id for s in self.sources}
        for field, section in (("intra_node", self.intra_node), ("network", self.network)):
            if section is not None and ids and section.source not in ids:
                raise SpecError(f"{where}: field '{field}.source': {section.source!r} is not among the sources "
                                f"({', '.join(sorted(ids))})")
        if self.nodes > 1 and self.network is None:
            raise SpecError(f"{where}: nodes={self.nodes} needs a network section (the file describes one node)")
        return self

    @property
    def gpu_spec(self) -> Any:
        """The GPU spec the system is built of."""
        return load_gpu(self.gpu)

    @property
    def n_gpus(self) -> int:
        """GPUs in the whole system."""
        return self.nodes * self.gpus_per_node

    @property
    def link_bandwidth(self) -> float:
        """Intra-node bytes/s per GPU, one direction (half the cited total)."""
        return self.intra_node.bandwidth_gb_s * GIGA / 2

    @property
    def network_bandwidth(self) -> float:
        """Inter-node bytes/s per GPU, one direction: the node's NICs shared by its GPUs (0 without a network)."""
        if self.network is None:
            return 0.0
        return self.network.nics_per_node * self.network.nic_gbit_s * GIGA / 8 / self.gpus_per_node

    def with_nodes(self, nodes: Any) -> "System":
        """The same system with ``nodes`` nodes."""
        return System.model_validate({**self.model_dump(), "nodes": whole("nodes", nodes, ArgumentTypeError)})

    def __str__(self) -> str:
        net = (f", {self.network.nics_per_node} x {self.network.nic_gbit_s:g} Gb/s {self.network.name} per node"
               if self.network else "")
        return (f"{self.full_name} ({self.name}) x {self.nodes} node(s): {self.gpus_per_node} x {self.gpu}, "
                f"{self.intra_node.name} {self.intra_node.bandwidth_gb_s:g} GB/s per GPU{net}")


def _system_files(spec_path: Any) -> list[Path]:
    """Every ``systems/*.yaml`` of the spec folders, earlier folders first."""
    files: list[Path] = []
    for folder in spec_dirs(spec_path):
        sub = Path(folder) / SYSTEMS_DIR
        if sub.is_dir():
            files += sorted(p for p in sub.glob("*.yaml") if not p.name.startswith("."))
    return files


_PARSED: dict[str, tuple[tuple[int, int, int], System]] = {}


def _load_file(path: str) -> System:
    """One system file, validated (cached on (inode, ctime_ns, size))."""
    st = stat_spec(path, "system file")
    key = (st.st_ino, st.st_ctime_ns, st.st_size)
    hit = _PARSED.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    data = document(path, read_spec_bytes(path, st))
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping of system fields at the top level, got {type(data).__name__}")
    system = System.model_validate(data, context={"spec_file": path})
    _PARSED[path] = (key, system)
    return system


@checked_call
def list_systems(spec_path: Any = None) -> list[str]:
    """Canonical names of the available systems, sorted."""
    return sorted({_load_file(str(p)).name for p in _system_files(spec_path)})


@checked_call
def load_system(name: Any, nodes: Any = 1, spec_path: Any = None) -> System:
    """A system by name or alias (case-insensitive), path to a YAML file, mapping or System, with ``nodes`` nodes."""
    if isinstance(name, System):
        system = name
    elif isinstance(name, dict):
        system = System.model_validate(name)
    elif isinstance(name, os.PathLike) or (isinstance(name, str) and name.endswith((".yaml", ".yml"))):
        system = _load_file(os.path.abspath(os.fspath(name)))
    elif isinstance(name, str):
        key = name.strip().lower()
        known = [_load_file(str(p)) for p in _system_files(spec_path)]
        found = [s for s in known if key == s.name or key in (a.lower() for a in s.aliases)]
        if not found:
            names = ", ".join(sorted({s.name for s in known}))
            raise UnknownGPUError(f"system {name!r} is not a known system; known: {names} "
                                  f"(a GPU name gives one node of it: solkit.hardware.default_system(gpu))")
        system = found[0]
    else:
        raise ArgumentTypeError(f"system must be a system name, a path to a .yaml file, a mapping or a System, got {name!r}")
    return system if type(nodes) is int and nodes == system.nodes else system.with_nodes(nodes)


def default_system(gpu: Any) -> System:
    """One node of the GPU's usual system: a shipped system of that GPU, else one built from its interconnect."""
    g = as_gpu(gpu)
    memo = g.memo
    found = memo.get("system")
    if found is not None:
        return found  # type: ignore[no-any-return]
    for path in _system_files(None):
        candidate = _load_file(str(path))
        if candidate.gpu == g.name:
            found = candidate
            break
    if found is None:
        ic = g.interconnect
        if ic.bandwidth_gb_s and "bridge" in ic.name:
            group = max((n for words, n in _BRIDGE_GROUP.items() if words in ic.name), default=2)
            intra = {"name": ic.name, "topology": "bridge", "bandwidth_gb_s": ic.bandwidth_gb_s, "source": ic.source}
        elif ic.bandwidth_gb_s:  # SXM/OAM parts: a node of 8, every pair at the part's full link rate
            group = _SWITCH_NODE
            intra = {"name": ic.name, "topology": "switch", "bandwidth_gb_s": ic.bandwidth_gb_s, "source": ic.source}
        else:
            group = _PCIE_NODE
            intra = {"name": ic.pcie, "topology": "pcie", "bandwidth_gb_s": ic.pcie_bandwidth_gb_s, "source": ic.source}
        found = System.model_validate({
            "name": f"{g.name}-node", "full_name": f"one node of {group} x {g.full_name} ({ic.name if ic.bandwidth_gb_s else ic.pcie})",
            "gpu": g.name, "gpus_per_node": group, "intra_node": intra, "sources": g.sources,
            "notes": f"built from {g.name}'s interconnect: no system file names this GPU"})
    memo["system"] = found
    return found


def as_system(target: Any) -> tuple[Any, System]:
    """(GPU, System) of a GPU (one node of its usual system), a System (its GPU) or a shipped system's name (one node)."""
    if isinstance(target, System):
        return target.gpu_spec, target
    try:
        g = as_gpu(target)
    except UnknownGPUError:
        if isinstance(target, str) and target.strip().lower() in _system_names():  # a system's name: one node of it
            system = load_system(target)
            return system.gpu_spec, system
        raise
    return g, default_system(g)


def _system_names() -> set[str]:
    """The shipped systems' names and aliases, lower case."""
    return {n.lower() for s in list_systems() for n in (s, *load_system(s).aliases)}

