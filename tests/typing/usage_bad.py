"""Four mistakes a type checker must flag, one a line, each marked by a comment ``mistake: ...``: tests/test_typing.py runs
``mypy --strict`` here and expects exactly one error on each marked line and none elsewhere."""

from __future__ import annotations

import solkit as sk
from solkit import models, ops

w = ops.matmul(4096, 4096, 4096)
m = models.preset("llama3-8b")

r = sk.roofline(w, 42)  # mistake: a GPU passed as a number
x = ops.matmul(4096, 4096, 4096, dtyp="bf16")  # mistake: a misspelt keyword
y = ops.matmul(4096, 4096, 4096, batch="one")  # mistake: a dimension given as text
z = m.forward(batch=1, seq=2048, kernels="fusd")  # mistake: a kernel style that does not exist
p = sk.predict(w, 42)  # mistake: a GPU passed as a number
q = sk.load_profile("trace.json.gz", gpu=42)  # mistake: a GPU passed as a number
n = models.resnet50(8, kernels="fusd")  # mistake: a kernel style that does not exist
v = models.resnet50(8, layout="NHWCx")  # mistake: a layout that does not exist
