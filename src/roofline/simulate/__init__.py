"""Discrete-event serving simulator (lecture §1.5 train departures, §1.8 fast/slow modes).

workload.py  arrivals (Poisson, gamma, time-varying, CSV traces) and lengths
steptable.py StepModel interface (roofline.step, the lecture's board, constant) and its table
policies.py  continuous / chunked / static / train schedulers, SLO targets
core.py      the event loop (one Simulation object, seeded Generator) returning a Trace
segments.py  the loop's clock record in preallocated NumPy columns; iteration times from it
pools.py     disaggregated prefill/decode and fast/slow deployments built from the core
metrics.py   TTFT, TPOT, latency percentiles, throughput, goodput, utilisation, cost, Little's law
grid.py      scenario grids (rates x policies x layouts x workloads), one row each, on roofline.executors
"""

from .core import OutputStage, Simulation, Trace, simulate
from .policies import POLICIES, Policy, Targets
from .steptable import (
    BoardStep,
    ConstantStep,
    Deployment,
    EfficiencyModelStep,
    EngineStep,
    RooflineStep,
    StepTable,
    deployment,
    roofline_deployment,
)
from .workload import Workload, make_workload, read_trace, write_trace

__all__ = ["OutputStage", "Simulation", "Trace", "simulate", "POLICIES", "Policy", "Targets", "BoardStep", "ConstantStep",
           "Deployment", "EfficiencyModelStep", "EngineStep", "RooflineStep", "deployment", "StepTable", "roofline_deployment", "Workload", "make_workload",
           "read_trace", "write_trace"]
