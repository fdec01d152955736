"""The predictor's parameters: each named once, with its unit in the spec file and its SI value in Python.

A spec's ``measured:`` section spells a parameter with its unit as a suffix (``launch_floor_us``),
Python without it, in SI units (``Calibration.launch_floor``, seconds), converted once, at load.
This module has no pydantic: the predictor imports it without importing the spec schema.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, NamedTuple, Union

__all__ = ["Parameter", "PARAMETERS", "UNIT_FACTORS", "Calibration", "ReadOnlyTable"]

TERA = 1e12

#: unit suffix of a ``measured:`` key -> factor to SI ("" : a dimensionless number)
UNIT_FACTORS: Mapping[str, float] = MappingProxyType({"tflops": TERA, "tb_s": TERA, "gb_s": 1e9, "us": 1e-6, "": 1.0})


class ReadOnlyTable(dict):  # type: ignore[type-arg]
    """A table of a spec (per key or rate class), shared by every load: it refuses changes, yet copies and pickles.

    A dict for C-speed lookups; every mutator raises ``TypeError``, as a tuple's would. (``MappingProxyType``
    cannot be deep-copied or pickled, so a GPU holding one could not be sent to a worker process.)
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a spec's table is read-only (shared by every load_gpu); copy it with dict(table)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse  # type: ignore[assignment]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if self:  # dict.__init__ on a built table would add to it
            self._refuse()
        super().__init__(*args, **kwargs)

    def __reduce__(self) -> Any:
        return (ReadOnlyTable, (dict(self),))

    def __copy__(self) -> "ReadOnlyTable":
        return self

    def __deepcopy__(self, memo: Any) -> "ReadOnlyTable":
        return self

    def __repr__(self) -> str:
        return f"ReadOnlyTable({dict.__repr__(self)})"


class Parameter(NamedTuple):
    """One parameter of the predictor: its name, its unit in the file, how it is obtained and written."""

    name: str  # the Python name, in SI units
    unit: str  # the file's unit suffix (a key of UNIT_FACTORS)
    keyed: bool  # a table: per rate class (matmul_rate) or per calibration key
    fitted: bool  # fitted on the training cases (else measured directly)
    digits: int  # decimals kept in the file, in its unit
    meaning: str

    @property
    def file_key(self) -> str:
        """The key in a spec's ``measured:`` section: the name with its unit suffix."""
        return f"{self.name}_{self.unit}" if self.unit else self.name


#: every parameter of the predictor, once (solkit.prediction says how each is used)
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("matmul_rate", "tflops", True, False, 1, "dense matmul FLOP/s per rate class, best median of large squares"),
    Parameter("copy_bandwidth", "tb_s", False, False, 3, "device-to-device copy, bytes read + written per second"),
    Parameter("read_bandwidth", "tb_s", False, False, 3, "a large sum reduction, bytes read per second"),
    Parameter("launch_floor", "us", False, False, 2, "the timer's reading for a one-element kernel"),
    Parameter("kernel_gap", "us", False, True, 2, "what each further launch in a workload adds"),
    Parameter("kernel_latency", "us", True, True, 2, "a kernel's fixed cost beyond its work, per calibration key"),
    Parameter("compute_efficiency", "", True, True, 3, "share of the compute ceiling a kernel reaches, per key"),
    Parameter("memory_efficiency", "", True, True, 3, "share of the copy bandwidth a kernel reaches, per key"),
    Parameter("wave_latency", "us", True, True, 2, "what each wave of work items (tiles, rows) adds, per key"),
    Parameter("kstep_latency", "us", True, True, 3, "the least time a GEMM or conv tile's k-loop step (64 elements of k) or the memory-efficient attention block's step (a key block) takes, per key"),
    Parameter("block_bandwidth", "gb_s", True, True, 3, "bytes per second one thread block streams (its row, its GEMM tile), per key"),
    Parameter("overlap_exponent", "", False, True, 3, "p of the soft maximum (t_c^p + t_m^p)^(1/p) of compute and memory"),
    Parameter("host_launch", "us", False, False, 2, "host (CPU) time per launch of an eager PyTorch inference program"),
    Parameter("host_launch_training", "us", False, False, 2, "host time per launch of an eager PyTorch training step"),
    Parameter("host_layer", "us", False, False, 1, "host time per layer of an eager model's forward (its modules' Python)"),
    Parameter("host_program", "us", False, False, 1, "host time per eager program before its first launch (the model's preamble)"),
    Parameter("host_probe", "us", False, False, 2, "the launch probe on the machine the host parameters were fitted on (median "
              "host time of one small torch.add launch, profile.host_probe): predict(host_probe_us=) scales the host by yours over it"),
    Parameter("host_captured_launch", "us", False, False, 2, "host time per launch of a captured eager inference program"),
    Parameter("host_captured_launch_training", "us", False, False, 2, "host time per launch of a captured eager training step"),
    Parameter("host_captured_call", "us", False, False, 2, "host time per ATen call of a captured program that launches nothing "
              "(views, metadata, allocations)"),
    Parameter("host_captured_module", "us", False, False, 2, "host time per module forward of a captured program (its Python)"),
    Parameter("host_captured_program", "us", False, False, 1, "host time of a captured Hugging Face model before its first launch"),
    Parameter("op_host_weight", "", True, False, 2, "host time of one launching ATen call of a captured program in plain "
              "launches (host_captured_launch), per host key (capture.host_keys; 1 where a key is absent): its measured "
              "host time per call over a torch.add's (benchmarks/programs/op_host.py)"),
    Parameter("host_fsdp_group", "us", False, False, 1, "host time of FSDP2's hooks per sharded layer per pass (unshard, reshard, copies)"),
    Parameter("link_latency", "us", True, False, 2, "a collective's fixed time on 2 GPUs of one node (launch, handshake), per collective"),
    Parameter("link_efficiency", "", True, False, 3, "share of the link's per-direction bandwidth a large collective's bus bytes reach, per collective"),
    Parameter("link_misaligned", "", True, False, 2, "the efficiency's factor for a buffer of 16 MiB or more whose chunk per GPU (nbytes / n_gpus) is not a multiple of 16 bytes, per collective (prediction.misaligned_chunk)"),
    Parameter("link_hop", "us", False, False, 2, "what each ring step beyond a 2-GPU ring's adds inside a node"),
    Parameter("network_hop", "us", False, False, 2, "what each ring step beyond a 2-GPU ring's adds when the group spans nodes"),
)


@dataclass(frozen=True)
class Calibration:
    """The predictor's parameters for one GPU in SI units, and where they came from (``PARAMETERS`` names)."""

    gpu: str
    calibrated: bool
    source: str
    matmul_rate: Mapping[str, float]  # FLOP/s per rate class
    copy_bandwidth: float  # bytes/s
    read_bandwidth: Union[float, None]  # bytes/s
    launch_floor: float  # s
    kernel_gap: float  # s
    kernel_latency: Mapping[str, float]  # s per calibration key
    compute_efficiency: Mapping[str, float]
    memory_efficiency: Mapping[str, float]
    wave_latency: Mapping[str, float]  # s per wave of work items, per calibration key
    kstep_latency: Mapping[str, float]  # s per k-loop step, per calibration key
    block_bandwidth: Mapping[str, float]  # bytes/s of one block, per calibration key
    overlap_exponent: float
    host_launch: float = 0.0  # s of host time per launch, eager inference programs (0: not measured)
    host_launch_training: float = 0.0  # s per launch, eager training steps
    host_layer: float = 0.0  # s per layer of the forward
    host_program: float = 0.0  # s per program
    host_captured_launch: float = 0.0  # s per launch, captured eager inference programs (0: not measured)
    host_captured_launch_training: float = 0.0  # s per launch, captured training steps
    host_captured_call: float = 0.0  # s per ATen call that launches nothing, captured programs
    host_captured_module: float = 0.0  # s per module forward, captured programs
    host_captured_program: float = 0.0  # s per captured Hugging Face model's preamble
    op_host_weight: Mapping[str, float] = field(default_factory=lambda: ReadOnlyTable())  # launches per call, per key
    host_fsdp_group: float = 0.0  # s per FSDP-sharded layer per pass
    host_probe: float = 0.0  # s per torch.add launch on the fit's machine (0: not measured)
    link_latency: Mapping[str, float] = field(default_factory=lambda: ReadOnlyTable())  # s per collective
    link_efficiency: Mapping[str, float] = field(default_factory=lambda: ReadOnlyTable())  # per collective
    link_misaligned: Mapping[str, float] = field(default_factory=lambda: ReadOnlyTable())  # per collective (1: none)
    link_hop: float = 0.0  # s per further ring step in a node
    network_hop: float = 0.0  # s per further ring step across nodes
    neighbours: Any = None  # the measured kernels' bank (solkit.prediction.neighbours.Neighbours), None: no correction
    #: derived from the fields above, on first use (the predictor's per-key parameters of one shape's kernels); a
    #: ``replace``d copy starts its own
    memo: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def replace(self, **changes: Any) -> "Calibration":
        """A copy with some parameters replaced (the fit tries values this way)."""
        return Calibration(**{**{k: v for k, v in self.__dict__.items() if k != "memo"}, **changes})
