"""roofline: the math of how large language models are trained and served, executable and checked.

Quick use:
    >>> import roofline as rl
    >>> r = rl.step(rl.get_model("llama-3-70b"), rl.get_system("dgx-h100"), batch=64, context=4096)
    >>> r.step_s, r.bound_name

Importing is cheap: NumPy and the records only; catalogs load on first use, plotting lazily.
"""

from .catalog import accelerator as get_accelerator
from .catalog import get_catalog
from .catalog import model as get_model
from .catalog import system as get_system
from .efficiency import Efficiency
from .engine import PassResult
from .errors import CatalogError, DoesNotFitError, InputError, RooflineError
from .layout import Layout
from .requests.api import step  # engine.step with its inputs checked (ids or records; no "64", True, 2.5)

StepResult = PassResult  # the former name of the engine's result

__version__ = "0.1.0"
__all__ = [
    "get_accelerator", "get_system", "get_model", "get_catalog", "step", "Efficiency", "Layout", "PassResult",
    "StepResult", "RooflineError", "InputError", "CatalogError", "DoesNotFitError",
]
