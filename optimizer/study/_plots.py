"""The study's charts, drawn by optuna.visualization's matplotlib backend and inlined as SVG (no network).

Matplotlib is asked for byte-stable SVG (a fixed hash salt, no date), so a reproduced study writes the same
page; the Agg backend needs no display.
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Callable
from typing import Any

import optuna

SVG_SALT = "edgeplan"


def _svg(draw: Callable[[], Any], x_label: str | None = None, y_label: str | None = None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    with matplotlib.rc_context({"svg.hashsalt": SVG_SALT, "svg.fonttype": "none", "font.size": 9}), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optuna marks its matplotlib backend experimental
        axes = draw()
        ax = axes.flat[0] if hasattr(axes, "flat") else axes
        if x_label:
            ax.set_xlabel(x_label)
        if y_label:
            ax.set_ylabel(y_label)
        figure = ax.figure
        figure.set_size_inches(7.0, 3.6)
        figure.tight_layout()
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
        plt.close(figure)
    text = buffer.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)  # RDF licence block: nothing to show
    return text[text.find("<svg"):]


def _completed(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]


def history_svg(study: optuna.Study, unit: str) -> str:
    if not _completed(study):
        return "<p>No completed trial.</p>"
    if len(study.directions) > 1:
        return ""
    from optuna.visualization.matplotlib import plot_optimization_history

    svg = _svg(lambda: plot_optimization_history(study, target_name=f"objective ({unit})"), "trial number",
               f"objective ({unit})")
    return f'<figure class="chart" aria-label="optimisation history">{svg}</figure>'


def importance_svg(study: optuna.Study) -> str:
    """Parameter importances (PED-ANOVA); when every trial gave the same value no parameter mattered: say so."""
    completed = _completed(study)
    values = {tuple(t.values) for t in completed if t.values is not None}
    if len(values) <= 1:
        shown = ", ".join(f"{v:.4f}" for v in next(iter(values), ()))
        return (f"<p>No parameter changed the result: all {len(completed)} completed trial(s) gave {shown}. "
                "The planner alone already reaches this plan.</p>")
    if not {k for t in completed for k in t.params}:
        return "<p>The study has no searched parameter.</p>"
    from optuna.visualization.matplotlib import plot_param_importances

    try:
        svg = _svg(lambda: plot_param_importances(
            study, evaluator=optuna.importance.PedAnovaImportanceEvaluator(),
            target=(lambda t: t.values[0]) if len(study.directions) > 1 else None),
            "importance (PED-ANOVA, Optuna's default)", None)
        return f'<figure class="chart" aria-label="parameter importances">{svg}</figure>'
    except (RuntimeError, ValueError, ZeroDivisionError):
        return "<p>Not enough completed trials with varying parameters to rank their importance.</p>"


def pareto_svg(study: optuna.Study, names: list[str]) -> str:
    """The Pareto front of a multi-objective study; nothing for a single objective."""
    if len(study.directions) < 2 or not _completed(study):
        return ""
    from optuna.visualization.matplotlib import plot_pareto_front

    return _svg(lambda: plot_pareto_front(study, target_names=names[:3]))
