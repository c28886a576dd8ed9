"""validation: fit the simulator's costs to measured runs and show the prediction error.

``validation/data/thesis.csv`` holds the thesis's measured numbers as
``source = "paper"`` RunRecords (see validation/data/README.md).

* :mod:`validation.records`: load a records CSV (thesis.csv or any results.csv),
  refuse bad rows, map a record to the simulator scenario that reproduces it;
* :mod:`validation.fitter`: :class:`CostFitter`, least-squares fit of named costs;
* :mod:`validation.report`: ``python -m validation report``, prediction vs
  measurement, per-table summaries, plots, ``docs/validation/summary.json``;
* :mod:`validation.cli`: ``simaccept fit``, ``simaccept predict`` and ``python -m validation``.
"""
from .fitter import CostFitter, FitError, NotFittedError
from .records import Measured, NotSimulable, RecordError, load_records, load_thesis, scenario_for, select_records

__all__ = ["CostFitter", "FitError", "NotFittedError", "Measured", "NotSimulable", "RecordError", "load_records",
           "load_thesis", "scenario_for", "select_records"]
