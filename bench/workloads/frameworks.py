"""A few launches and allocations from CuPy or JAX, run under the shim to see
that their paths to the driver are recorded and their device work joined
(python3 frameworks.py cupy|jax; bench/nbbench device-check); and a JAX
training loop for nb's step census (python3 frameworks.py jax-loop STEPS:
an MLP's jitted SGD step, its loss read every 10 steps as a loop that
logs does; bench/nbbench census)."""
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
elif which == "jax-loop":
    import jax
    import jax.numpy as jnp
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    k = jax.random.split(jax.random.PRNGKey(0), 4)
    params = [jax.random.normal(k[0], (512, 1024)) * 0.02, jax.random.normal(k[1], (1024, 512)) * 0.02]
    x = jax.random.normal(k[2], (256, 512))
    y = jax.random.normal(k[3], (256, 512))

    def loss_fn(p, x, y):
        return jnp.mean((jnp.tanh(x @ p[0]) @ p[1] - y) ** 2)

    @jax.jit
    def update(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return [w - 0.01 * gw for w, gw in zip(p, g)], loss

    for i in range(steps):
        params, loss = update(params, x, y)
        if i % 10 == 9:
            last = float(loss)
    print("jax-loop steps", steps, "loss", last, jax.devices())
