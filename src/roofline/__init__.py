"""roofline: the math of how large language models are trained and served, executable and checked.

Quick use:
    >>> import roofline as rl
    >>> r = rl.step(rl.get_model("llama-3-70b"), rl.get_system("dgx-h100"), batch=64, context=4096)
    >>> r.step_s, r.bound_name

Importing is cheap: the names below are resolved on first use (PEP 562), so `import roofline` and
`roofline --help` load neither NumPy nor a catalog. The lazy imports that keep start-up fast are listed
in docs/architecture.md ("Start-up").
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: public name -> (module, attribute)
_EXPORTS = {
    "get_accelerator": ("catalog", "accelerator"), "get_system": ("catalog", "system"),
    "get_model": ("catalog", "model"), "get_catalog": ("catalog", "get_catalog"),
    "step": ("requests.api", "step"),  # engine.step with its inputs checked (issue 16)
    "PassResult": ("engine", "PassResult"), "StepResult": ("engine", "PassResult"),
    "Efficiency": ("efficiency", "Efficiency"), "Layout": ("layout", "Layout"),
    "RooflineError": ("errors", "RooflineError"), "InputError": ("errors", "InputError"),
    "CatalogError": ("errors", "CatalogError"), "DoesNotFitError": ("errors", "DoesNotFitError"),
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'roofline' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
