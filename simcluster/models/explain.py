"""``lucid-sim explain``: train Lucid's three models as the policy would, and show what they learned.

For each model it writes the global term importances (``<model>_importances.csv``), the shape
function of its top terms (``<model>_<term>.png``) and accuracy figures (``explain.json``):

- **packing**: the classifier trained on the colocation tables; accuracy on held-out
  configurations (stratified k-fold), against our labels and, for Lucid's table, the authors'.
- **workload**: the duration regressor on the trace's jobs in submission order (features as at
  submission: a user's history holds only jobs that would have finished by then); trained on
  the first 80 % of jobs, MAE and median relative error on the last 20 %, next to the
  ``history`` estimator's (and the Lucid artifact's estimates, when they sit beside the trace).
- **throughput**: the next-hour submission forecast; trained on the cluster's log before the
  trace (or the trace's first 70 % of bins), MAE on the rest next to the persistence forecast's.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simcluster.atomic import atomic_write
from simcluster.config import SimConfig
from simcluster.estimators.ebm import FEATURES as WORKLOAD_FEATURES
from simcluster.estimators.ebm import UserHistory, fit_duration_model, submission_row
from simcluster.job import Job
from simcluster.models.explanation import plot_shape, term_importances, top_shapes
from simcluster.results import to_json
from simcluster.traces import Trace
from simcluster.traces.venus import DEFAULT_EPOCH

TOP_TERMS = 3
REFERENCE_ESTIMATES = Path("reference_estimates") / "lucid_ebm_priority.csv"


def _errors(estimates: np.ndarray, truths: np.ndarray) -> dict[str, float]:
    error = np.abs(estimates - truths)
    return {"mae": float(error.mean()), "median_relative_error": float(np.median(error / np.maximum(truths, 1.0)))}


def _write_model(name: str, model: Any, out: Path, class_names: list[str] | None = None) -> dict[str, Any]:
    importances = term_importances(model)
    atomic_write(out / f"{name}_importances.csv", lambda h: h.write(importances.to_csv(index=False).encode()))
    plots = []
    for shape in top_shapes(model, TOP_TERMS):
        path = out / f"{name}_{shape.term}.png"
        plot_shape(shape, path, f"{name} model: {shape.term}", class_names)
        plots.append(path.name)
    return {"importances": importances.round(6).to_dict("records"), "plots": plots}


def submissions(jobs: list[Job]) -> Iterator[tuple[Job, list[Job]]]:
    """Each job in submission order, with the jobs that would have finished (submit + duration) since the last."""
    running: list[tuple[float, int, Job]] = []  # (finish, index, job), a heap
    for job in sorted(jobs, key=lambda j: (j.submit_time, j.index)):
        finished = []
        while running and running[0][0] <= job.submit_time:
            finished.append(heapq.heappop(running)[2])
        yield job, finished
        heapq.heappush(running, (job.submit_time + job.duration, job.index, job))


def workload_rows(jobs: list[Job]) -> pd.DataFrame:
    """Submission features of ``jobs`` in submission order, as the estimator would see them."""
    history = UserHistory()
    rows = []
    for job, finished in submissions(jobs):
        for done in finished:
            history.observe(done)
        rows.append(submission_row(job, history))
    return pd.DataFrame(rows, columns=WORKLOAD_FEATURES)


def explain_packing(config: SimConfig, out: Path) -> dict[str, Any]:
    from simcluster.colocation.loader import load_colocation_model
    from simcluster.models.packing import CLASS_NAMES, PackingModel

    colocation = load_colocation_model(config.colocation)
    packing = PackingModel(colocation, tuple(config.packing_thresholds), config.seed)
    report = packing.evaluate_for(config.colocation)
    if packing.model is not None:
        report.update(_write_model("packing", packing.model, out, [CLASS_NAMES[c] for c in packing.classes]))
    return report


def explain_workload(trace: Trace, config: SimConfig, out: Path) -> dict[str, Any]:
    jobs = sorted(trace.make_jobs(), key=lambda j: (j.submit_time, j.index))
    rows = workload_rows(jobs)
    durations = np.array([j.duration for j in jobs], dtype=float)
    cut = int(len(jobs) * 0.8)
    if cut < 100 or len(jobs) - cut < 10:
        return {"note": f"too few jobs ({len(jobs)}) to train and test the workload model"}
    model = fit_duration_model(rows.iloc[:cut], durations[:cut], config.seed, config.boosting)
    predicted = np.maximum(0.0, np.expm1(model.predict(rows.iloc[cut:])))
    report: dict[str, Any] = {"train_jobs": cut, "test_jobs": len(jobs) - cut,
                              "ebm": _errors(predicted, durations[cut:])}
    # the history estimator on the same test jobs, as it would answer at their submissions
    from simcluster.estimators.history import History

    history = History(config)
    answers = []
    for i, (job, finished) in enumerate(submissions(jobs)):
        for done in finished:
            history.observe(done, 0.0)
        if i >= cut:
            answers.append(history.estimate(job, job.submit_time))
    report["history"] = _errors(np.array(answers), durations[cut:])
    reference = Path(trace.source).parent / REFERENCE_ESTIMATES
    if reference.is_file():
        from simcluster.estimators.from_file import read_estimates

        values = read_estimates(reference)
        test = [(values[j.job_id], j.duration) for j in jobs[cut:] if j.job_id in values]
        if test:
            est, true = np.array(test, dtype=float).T
            report["lucid_artifact"] = {**_errors(est, true), "file": str(reference)}
    report.update(_write_model("workload", model, out))
    return report


def explain_throughput(trace: Trace, config: SimConfig, out: Path) -> dict[str, Any]:
    from simcluster.models import throughput as tp

    start = int(trace.frame["submit_time"].min() // tp.BIN)
    end = int(trace.frame["submit_time"].max() // tp.BIN)
    log = config.throughput_history or trace.throughput_history
    if log:
        first, counts = tp.read_throughput_log(log, DEFAULT_EPOCH)
        series, cut, source = tp.SubmissionSeries(first, counts), start, str(log)
    else:
        series = tp.SubmissionSeries(start)
        for t in trace.frame["submit_time"].to_numpy():
            series.record(float(t))
        cut, source = start + int((end - start) * 0.7), "the trace's own submissions"
    forecaster = tp.ThroughputForecaster(series, train_until=cut, quantile=config.share_load_quantile,
                                         seed=config.seed, boosting=config.boosting)
    if forecaster.model is None:
        return {"source": source, "note": "less than a day of bins to train on"}
    test = [b for b in range(cut, end + 1) if not math.isnan(series.next_hour(b))]
    truth = np.array([series.next_hour(b) for b in test])
    predicted = np.array([forecaster.forecast(b * tp.BIN) for b in test])
    persistence = np.array([series.features(b)[tp.LAST_HOUR] for b in test])
    persistence = np.where(np.isnan(persistence), 0.0, persistence)
    report = {"source": source, "train_bins": forecaster.trained_on, "test_bins": len(test),
              "mae": float(np.abs(predicted - truth).mean()),
              "persistence_mae": float(np.abs(persistence - truth).mean()),
              "mean_submissions_per_hour": float(truth.mean()), "threshold": forecaster.threshold,
              "high_fraction": float((predicted >= forecaster.threshold).mean())}
    report.update(_write_model("throughput", forecaster.model, out))
    return report


def explain(trace: Trace, config: SimConfig, out: Path) -> dict[str, Any]:
    """Train the three models on ``trace`` (and the colocation tables ``config`` names); write to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    report = {"trace": trace.source, "packing": explain_packing(config, out),
              "workload": explain_workload(trace, config, out), "throughput": explain_throughput(trace, config, out)}
    atomic_write(out / "explain.json", lambda h: h.write(to_json(report, indent=2).encode()))
    return report
