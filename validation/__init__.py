"""validation: fit the simulator's costs to measured runs and show the prediction error.

``validation/data/thesis.csv`` holds the thesis's measured numbers as
``source = "paper"`` RunRecords (see validation/data/README.md).
"""
