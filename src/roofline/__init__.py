"""roofline: the math of how large language models are trained and served, executable and checked.

Quick use:
    >>> import roofline as rl
    >>> r = rl.step(rl.model("llama-3-70b"), rl.system("dgx-h100"), batch=64, context=4096)
    >>> r.step_s, r.bound

Importing is cheap: NumPy and the records only; catalogs load on first use, plotting lazily.
"""

from .catalog import accelerator, get_catalog, model, system
from .errors import CatalogError, DoesNotFitError, InputError, RooflineError
from .roofline import Efficiency, StepResult, step

__version__ = "0.1.0"
__all__ = [
    "accelerator", "system", "model", "get_catalog", "step", "Efficiency", "StepResult",
    "RooflineError", "InputError", "CatalogError", "DoesNotFitError",
]
