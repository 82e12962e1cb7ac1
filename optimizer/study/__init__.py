"""Optuna studies around the planner, with stored, reproducible artifacts."""

from optimizer.study._config import StudyConfig, load_config
from optimizer.study._run import StudyOutcome, reproduce_study, resume_study, run_study

__all__ = ["StudyConfig", "StudyOutcome", "load_config", "reproduce_study", "resume_study", "run_study"]
