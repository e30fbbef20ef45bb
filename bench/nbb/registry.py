"""The scenarios by name: each a function of (Context, options), with its
own command-line options, whether it needs the GPU machine, and which figure
or check of the docs it backs (bench/README.md lists the same)."""

import inspect

SCENARIOS = {}


class Scenario:
    def __init__(self, name, fn, gpu, backs, options):
        self.name, self.fn, self.gpu, self.backs, self.options = name, fn, gpu, backs, options
        self.help = inspect.cleandoc(fn.__doc__ or "")


def option(*flags, **kw):
    return flags, kw


def scenario(name, gpu, backs, options=()):
    """Registers the decorated function as scenario `name`; its docstring's
    first paragraph is the help."""

    def register(fn):
        SCENARIOS[name] = Scenario(name, fn, gpu, backs, list(options))
        return fn

    return register


def csv(text):
    """A comma-separated option value as a list."""
    return [w for w in text.split(",") if w]
