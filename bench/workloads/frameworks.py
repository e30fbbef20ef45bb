"""A few launches and allocations from CuPy or JAX, run under the shim to see
that their paths to the driver are recorded and their device work joined
(python3 frameworks.py cupy|jax; bench/nbbench device-check)."""
import sys

which = sys.argv[1]
if which == "cupy":
    import cupy as cp
    x = cp.arange(1 << 20, dtype=cp.float32)
    for _ in range(10):
        x = x * 2 + 1
    print("cupy sum", float(x.sum()))
elif which == "jax":
    import jax
    import jax.numpy as jnp
    x = jnp.arange(1 << 20, dtype=jnp.float32)
    f = jax.jit(lambda v: (v * 2 + 1).sum())
    for _ in range(10):
        y = f(x)
    print("jax sum", float(y), jax.devices())
