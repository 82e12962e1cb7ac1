"""Latency-model calibration: situations of published measurements, predictions, fitted profiles."""

from optimizer.calibrate._predict import Prediction, predict
from optimizer.calibrate._situation import ACCELERATORS, METRICS, Figure, Scenario, Situation, prepare, score

__all__ = ["ACCELERATORS", "METRICS", "Figure", "Prediction", "Scenario", "Situation", "predict", "prepare", "score"]
