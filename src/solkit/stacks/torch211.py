"""PyTorch 2.11 (CUDA 13.0, cuBLAS 13, cuDNN 9.19) on Hopper: the library choices and eager launch counts solkit models.

Each fact names where it was read: PyTorch's source (file and function) or the H200 profiles and
measurements in ``data/`` (``measured.stack`` of ``hardware_specs/h200-sxm.yaml`` gives the versions).
NB: read off one stack on one GPU and applied on every GPU; another stack would be another module.
"""

from __future__ import annotations

from typing import Mapping

__all__ = ["VERSIONS", "ATTENTION_QUERY_TILE", "SPLITKV_QUERY_TILE", "WIDE_ROW_OPS", "WIDE_ROW", "WIDE_ROW_BYTES",
           "WIDE_ROW_THREADS", "WARP_BATCH_ROW", "FEW_INDICES", "FEW_INDEX_OPS", "ROW_VECTOR", "MIN_SPLIT_K",
           "CONV_K_TILE_BYTES", "FEW_CHANNEL_BYTES", "SERIAL_K", "LEGACY_PRECISIONS", "UNALIGNED_OK", "SKINNY", "CUDNN_PAD",
           "CUDNN_GROUPED_PAD_BACK",
           "CUDNN_SDPA_ARCHITECTURES", "SDPA_HALF", "ROPE_TABLE_KERNELS", "GELU_NEW_KERNELS", "SDPA_BACKWARD_LAUNCHES",
           "SDPA_GQA_BACKWARD_LAUNCHES", "LAYERNORM_BACKWARD_LAUNCHES", "ADAMW_TENSORS_PER_LAUNCH",
           "SGD_TENSORS_PER_LAUNCH", "CHUNK_ELEMENTS", "CHUNKS_PER_LAUNCH", "SDPA_DROPOUT_LAUNCHES",
           "EMBEDDING_BACKWARD_DIRECT", "EMBEDDING_BACKWARD_SORT_LAUNCHES", "CUB_SCAN_LAUNCHES",
           "SMALL_SORT", "HOST_KEYS", "SORT_CUB_LAUNCHES", "TOPK_SINGLE_BLOCK", "TOPK_SORTED_LAUNCHES",
           "GROUPED_MM_LAUNCHES",
           "CUDNN_DECODE_ROWS", "CUDNN_SPLIT_ITEMS", "CUDNN_SPLIT_KEYS", "CUDNN_DECODE_WIDE", "DEPTHWISE_OUTPUT_MACS",
           "EFFICIENT_KERNELS", "EFFICIENT_WARPS_PER_SM"]

#: the versions, as the H200 spec's ``measured.stack`` records them (a test holds the two equal)
VERSIONS: Mapping[str, str] = {"cuda": "13.0", "torch": "2.11.0+cu130", "cudnn": "91900"}

# ---- flash attention (flash_api.cpp) -----------------------------------------------------------

#: flash attention's query tile per work item (unsplit), and the split-KV kernel's
ATTENTION_QUERY_TILE = 128
SPLITKV_QUERY_TILE = 64

# ---- memory-efficient attention (mem_eff_attention, the cutlass kernels PyTorch took from xFormers) ----------

#: the forward kernels for compute capability 8.0 to 9.x (Hopper included; PyTorch 2.11's kernels/cutlassF.h,
#: dispatch_cutlassF_*_sm80, in dispatch order; attention.cu launches the first whose kMaxK holds the head dim): (kMaxK, queries per
#: block, keys per block). Its grid is (ceil(queries / block queries), heads, batch) (kernel_forward.h,
#: getBlocksGrid): no split over the keys, each block walks all its keys serially; warps per block = queries / 32 x
#: keys / 32 (32 x 32 warp tiles). Measured on an H200 (data/h200_sdpafp32_fit_seed2056.json, the kernel census):
#: fp32 SDPA ran fmha_cutlassF_f32_aligned_64x64_rf_sm80 for head dims 32-64 (73 of 73 MHA cases),
#: _64x128_rf_sm80 for 72-128 (102 of 102), _32x128_gmem_sm80 for 160-256 (56 of 56); forced in bf16/fp16
#: (data/h200_efficienthalf_fit_seed2057.json) the same three classes, 260 of 260
EFFICIENT_KERNELS: tuple[tuple[float, float, float], ...] = ((64.0, 64.0, 64.0), (128.0, 64.0, 128.0),
                                                             (65536.0, 32.0, 128.0))
#: the warps per SM each kernel's __launch_bounds__ asks room for (getWarpsPerSmFw in kernel_forward.h: 16 for
#: 16-bit types on sm80+, 12 for fp32): at least this / warps per block resident (kMinBlocksPerSm), as modelled
EFFICIENT_WARPS_PER_SM: Mapping[str, int] = {"fp32": 12, "bf16": 16, "fp16": 16}

# ---- row-wise kernels (ATen) -------------------------------------------------------------------

#: ops whose row-wise kernel changes implementation with the row width: their variant is "wide"; other
#: row-wise ops' is "unaligned". PyTorch's softmax (SoftMax.cu, host_softmax) runs a warp per row while the
#: row has at most WIDE_ROW elements and WIDE_ROW_BYTES bytes, else one block of min(cols, 1024) threads
#: (rounded up to a warp) per row: at most 2 such blocks fit an SM's 2,048 threads
WIDE_ROW_OPS = frozenset({"softmax"})
WIDE_ROW = 2048
WIDE_ROW_BYTES = 8192
WIDE_ROW_THREADS = 1024
#: the narrow softmax's warps take two rows each up to this many elements (WARP_BATCH in persistent_softmax.cuh)
WARP_BATCH_ROW = 128
#: PyTorch's index_select (hence embedding) walks the ids serially in every thread when there are at most
#: this many (Indexing.cu, indexSelectSmallIndex): each id is one step of a dependent chain
FEW_INDICES = 16
FEW_INDEX_OPS = frozenset({"embedding"})
#: elements a row's width must be a multiple of for the vectorized kernel (PyTorch's layer/RMS norm load 4
#: elements at a time whatever the dtype); other row-wise ops need 16 bytes; the rest take a slower path
ROW_VECTOR: Mapping[str, int] = {"layernorm": 4, "rmsnorm": 4}

# ---- cuBLAS ------------------------------------------------------------------------------------

#: split-K never cuts k below this many elements per split
MIN_SPLIT_K = 256
#: cuBLAS splits k beyond about this many elements when the tiles leave SMs idle: a tile's serial k loop
#: runs at most SERIAL_K / K_STEP steps (measured: nvjet kernels named _splitK from k = 2,688 on)
SERIAL_K = 2048.0
#: GEMM precisions cuBLAS runs with Ampere-era kernels on Hopper (the "legacy" variant)
LEGACY_PRECISIONS = frozenset({"tf32", "fp32", "fp64", "int8"})
#: GEMM precisions whose kernels take rows of any alignment at full speed
UNALIGNED_OK = frozenset({"fp32", "fp64"})
#: a GEMM whose m or n is at most this runs cuBLAS's GEMV-like kernels (the "skinny" variant)
SKINNY = 16

# ---- cuDNN -------------------------------------------------------------------------------------

#: an NCHW conv (groups = 1) with fewer input-channel bytes than this runs directly, without layout transforms
#: (measured on an H200: C = 3..7 bf16/fp16 ran cuDNN's implicit_convolve_sgemm alone in 6 of 7 sampled cases)
FEW_CHANNEL_BYTES = 16

#: an implicit-GEMM conv loads each filter tap's channels in k-tiles of this many bytes (C = 8 bf16 channels
#: of a 7x7 filter compute as 32)
CONV_K_TILE_BYTES = 64
#: (launches, helper bytes per byte the conv reads) cuDNN adds to pad a forward conv's unaligned channels, per layout.
#: Seen on an H200 in the sampled convs with unaligned channels of at least 16 bytes and filters larger than 1x1:
#: NHWC, two memsets and two or three nhwcAddPaddingKernel copies (x, w) in 11 of 12; NCHW, a memset and a
#: tensorTransformGeneric (w) beside the layout transforms (whose x transform pads x; w's few bytes are not counted)
CUDNN_PAD: Mapping[str, tuple[float, float]] = {"nhwc": (4.0, 3.0), "nchw": (2.0, 0.0)}
#: layouts whose grouped forward convs with unaligned channels per group (at least 16 bytes of them) cuDNN runs on
#: padded copies, 1x1 filters too, y included: x and w padded in, y written padded and copied back
#: (tensorTransformGeneric). Seen on an H200 in bf16 and fp16 (data/h200_grouped_*_seed2054.json: NHWC, 8 or more
#: channels per group, C/g or K/g not a multiple of 8): tensorTransformGeneric ran in 70 of 95 (55 of 69 larger filters,
#: 15 of 26 1x1), three launches (x, w, y) around one conv launch in 36 of the 70, y copied back by nhwcSliceCKernel in 8;
#: the other 25 ran without padding (implicit_convolve_sgemm 10, convolve_common_engine 7, a generated convFwd 4,
#: grouped_direct 3, layout transforms 3). NB: fp32 and tf32 are padded alike (unmeasured);
#: 23 of the 70 launched their conv once per group and copied no y back, which the model does not tell apart. In NCHW
#: (not listed) the layout transforms pad x, and a grouped 1x1 conv is padded no more than a dense one. NB: 5 of the 12
#: NCHW grouped unaligned stride-1 1x1 convs of those draws ran layout transforms and tensorTransformGeneric around
#: the conv (1 of 8 dense ones in all files); the model runs each as one GEMM
CUDNN_GROUPED_PAD_BACK = frozenset({"nhwc"})

# ---- scaled_dot_product_attention (sdp_utils.cpp) ----------------------------------------------

#: architectures on which PyTorch's SDPA prefers cuDNN's fused attention in fp16/bf16 (sdp_utils.cpp,
#: check_prefer_cudnn_attention: cuDNN > 9.15 on compute capability 9.0, 10.0 or 10.3); flash elsewhere
CUDNN_SDPA_ARCHITECTURES = frozenset({"hopper", "blackwell"})
#: dtypes SDPA's fused flash and cuDNN kernels take; others (fp32) go to the efficient kernel, or, with GQA, to the
#: unfused math path (the efficient kernel takes no GQA): measured on an H200, 74 of 74 fp32 cases
SDPA_HALF = ("bf16", "fp16")

# ---- eager Hugging Face transformers 5 modules, as the H200 profiles show them (data/profiles) ---

#: the small kernels of LlamaRotaryEmbedding's cos/sin table, once per forward (profiles: arange, add, two
#: casts, the inv_freq x positions bmm, cat, cos, scale, sin, scale, two casts)
ROPE_TABLE_KERNELS = 12
#: GPT-2's gelu_new, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as transformers' NewGELUActivation runs it:
#: one kernel per operation (name, tensors of T x ffn read), seen in the H200 profiles (pow, tanh, 3 muls by a scalar...)
GELU_NEW_KERNELS = (("pow", 1), ("mul", 1), ("add", 2), ("mul", 1), ("tanh", 1), ("add", 1), ("mul", 1), ("mul", 2))
#: launches of cuDNN's SDPA backward as eager PyTorch runs it on an H200 (profiles: the dO.O row sums, the flash
#: backward kernel, dQ converted to 16 bits); with grouped KV heads two more reduce dK and dV over each group.
#: NB: read off Hopper, applied on every GPU (where SDPA picks flash, not cuDNN, its backward launches differ)
SDPA_BACKWARD_LAUNCHES = 3
SDPA_GQA_BACKWARD_LAUNCHES = 5
#: launches of cuDNN's SDPA forward with dropout: the philox seed unpacked (at::cuda::philox::unpack_cudnn), then
#: the fused kernel (profiles: BERT's and GPT-2's training steps)
SDPA_DROPOUT_LAUNCHES = 2
#: embedding_dense_backward runs one kernel (after zeroing the gradient) for at most this many indices, else sorts them
#: (Embedding.cu: num_indices <= 3072 and not scale_grad_by_freq)
EMBEDDING_BACKWARD_DIRECT = 3072
#: the sorting path's launches beside its arange and its gradient's zero-fill, for int64 indices (profiles: cub's radix
#: sort histogram, exclusive sum and 8 one-sweep passes, then 9 kernels of segments and sums; 4 of 4 such calls)
EMBEDDING_BACKWARD_SORT_LAUNCHES = 19
#: a scan (cumsum) over a tensor of one row runs cub's inclusive scan: its init kernel, then the scan (ScanUtils.cuh:
#: numel == size(dim)); any other scan is one kernel
CUB_SCAN_LAUNCHES = 2
#: native_layer_norm_backward's launches: the input's gradient, then gamma's and beta's (a column reduction)
LAYERNORM_BACKWARD_LAUNCHES = 2

# ---- a mixture of experts' routing (H200 traces of a Mixtral-shaped MoE: data/profiles/steps/d2046-mixtral-*) ------

#: sort sorts a slice of at most this many elements in place (Sort.cpp: should_use_small_sort): its indices filled by
#: an arange kernel, then one sort kernel (radixSortKVInPlace, bitonic for short slices); the values' copy is a memcpy
SMALL_SORT = 4096
#: the host keys (``capture.host_keys``) whose call ``benchmarks/programs/op_host.py`` times, which a spec's
#: ``measured.op_host_weight`` may weigh (its add is the unit; its int32 cast is left out, as calibration.captured_host
#: says; NB: a long one-slice sort is ``sort_cub`` whatever its dtype; linear and addmm, GEMMs through the same
#: cuBLAS path, take mm's measurement)
HOST_KEYS = ("_grouped_mm", "addmm", "arange", "cumsum", "floor_divide", "histc", "index", "index_put_", "index_rows",
             "linear", "masked_fill", "mm", "softmax", "sort", "sort_cub", "topk")
#: a longer slice (of a tensor of one slice) goes to cub's radix sort: the reverse-index fill, cub's histogram and
#: exclusive sum, then one one-sweep pass per byte of the key (8-bit digits): 11 launches for int64 keys (4 of 4
#: calls of 6,792 experts' ids). NB: read off int64 keys; other key widths take their bytes' passes (CUB's sm90
#: radix-sort policy runs onesweep with 8-bit digits for every key size; its single-tile kernel never serves a slice
#: over 4,096, the int64 indices' tile being 256 threads x 9 items)
SORT_CUB_LAUNCHES = 3
#: topk of sorted values (k > 1) over slices shorter than this: ATen's single-block gatherTopK, then the k results
#: sorted in place (2 launches; TensorTopK.cu's multi-block path starts at 400 elements a slice for the most slices)
TOPK_SINGLE_BLOCK = 400
TOPK_SORTED_LAUNCHES = 2
#: a grouped GEMM in bfloat16 on Hopper: prepare_grouped_gemm_data (the groups' pointers and sizes from the offsets),
#: then the CUTLASS grouped kernel
GROUPED_MM_LAUNCHES = 2

# ---- torch.optim's multi_tensor_apply (MultiTensorApply.cuh) ------------------------------------

#: at most 36 tensors per launch with 4 lists (p, g, m, v: depth 4), chunks of 65,536 elements, at most 320
#: blocks (chunks) per launch
ADAMW_TENSORS_PER_LAUNCH = 36
SGD_TENSORS_PER_LAUNCH = 64  # depth 2 (p or buf, and d)
CHUNK_ELEMENTS = 65536
CHUNKS_PER_LAUNCH = 320

#: cuDNN's SDPA runs a work item (a KV head of a sequence) whose query rows fit this many as a decode kernel: it streams
#: the item's K and V from DRAM (the seed-2050 census: the flash fprop kernel, and a lean_reduction kernel when split)
CUDNN_DECODE_ROWS = 64
#: ... and splits the keys of each item (flash-decoding, a reduction kernel after) where at most this many items ...
CUDNN_SPLIT_ITEMS = 64
#: ... have more than this many keys each (the census: split from 558 keys up, never at 489 or below)
CUDNN_SPLIT_KEYS = 512
#: head dims above this run cuDNN's decode kernel at a lower share of the bandwidth (d = 256: ~2.4 TB/s, d <= 128 ~4)
CUDNN_DECODE_WIDE = 128
#: PyTorch's native NCHW depthwise kernel (conv_depthwise2d, a thread per output) spends about this many multiply-adds'
#: time per output on its index arithmetic and loads beside the R*S of its filter (1x1 stride-2 convs ran ~15x their FLOPs)
DEPTHWISE_OUTPUT_MACS = 14.0
