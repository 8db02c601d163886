"""The calibration set of labelled answers and the agreement metrics."""
