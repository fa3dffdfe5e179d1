"""The calibration's report: ``README.md`` (figures, parameters, the Gavel check) and ``fit.png``.

Written by ``python -m simcluster.colocation.calibrate`` beside ``parameters.json``: :func:`report_markdown`
for the fit to Lucid's public tables, :func:`refit_markdown` for a refit to our own measurements on one
GPU type.  Everything quoted is computed from the
:class:`~simcluster.colocation.calibration_results.FitReport`, nothing typed in by hand.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

from simcluster.colocation.calibration_results import FitReport, scores
from simcluster.colocation.model import CEILING, FLOOR

__all__ = ["plot_png", "refit_markdown", "report_markdown"]


def plot_png(report: FitReport) -> bytes:
    """One figure, three panels of predicted vs measured speed: the model the calibration replaces, the
    calibrated one in-sample, and the calibrated one on workloads left out of the fit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    subject = report.subject
    panels = [(subject.baseline_panel, report.baseline, report.rows.speed),
              (f"{subject.fitted}, in-sample", report.in_sample, report.rows.speed)]
    if report.folds:
        panels.append((f"{subject.fitted}, workload left out", *report.held_out()))
    figure, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.4), sharex=True, sharey=True)
    for ax, (title, predicted, measured) in zip(np.atleast_1d(axes), panels):
        few = len(measured) < 500  # a small table's points drawn so that each one shows
        ax.scatter(measured, predicted, s=16 if few else 5, alpha=0.6 if few else 0.25, color="tab:blue",
                   linewidths=0)
        ax.plot([0.3, 1.0], [0.3, 1.0], color="black", linewidth=0.8)
        ax.set_title(f"{title}\nMAE {scores(predicted, measured)['mae']:.3f}", fontsize=10)
        ax.set_xlabel(subject.axis)
        ax.set_xlim(0.3, 1.02)
        ax.set_ylim(0.3, 1.02)
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("predicted speed (shared / alone)")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
    plt.close(figure)
    return buffer.getvalue()


def _row(name: str, predicted: np.ndarray, measured: np.ndarray, note: str = "") -> str:
    s = scores(predicted, measured)
    return (f"| {name} | {s['mae']:.3f} | {s['p90']:.3f} | {s['mean_predicted']:.3f} | {s['corr']:.2f} | "
            f"{s['nan']} | {note} |")


def _names(names: Sequence[str]) -> str:
    names = list(names)
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else (names[0] if names else "no workload")


def _figure_lines(report: FitReport, fitted: str = "calibrated (the default)", short: str = "calibrated") -> list[str]:
    """The table of pair-speed errors, in-sample and held out, and the per-workload folds."""
    rows = report.rows
    measured_mean = float(rows.speed.mean())
    lines = [
        "| model | MAE | p90 error | mean predicted | correlation | NaN | note |",
        "|---|---:|---:|---:|---:|---:|---|",
        _row(report.subject.baseline_row, report.baseline, rows.speed, report.subject.baseline_note),
        _row("the mean measured speed for every pair", np.full(len(rows.speed), measured_mean), rows.speed,
             "in-sample"),
        _row(f"max-min rule refitted (kappa {report.legacy_kappa:.3f})", report.legacy, rows.speed,
             "calibrated utilizations, in-sample"),
        _row("contention rule, no per-workload factors", report.in_sample_global, rows.speed, "in-sample"),
        _row(f"**{fitted}**", report.in_sample, rows.speed, "**in-sample**"),
    ]
    if report.pair_held_out is not None:
        lines.append(_row(f"**{fitted}**", report.pair_held_out, rows.speed, "**pair left out**"))
    if report.folds:
        lines += [
            _row("the training pairs' mean speed", *report.held_out("predicted_mean"), "workload left out"),
            _row("contention rule, no per-workload factors", *report.held_out("predicted_global"),
                 "workload left out"),
            _row(f"**{fitted}**", *report.held_out(), "**workload left out**"),
            _row(short, *report.held_out("predicted_blind"), "nothing measured about the workload"),
            "",
            "Per workload left out (MAE over its pairs):",
            "",
            f"| workload | speeds | {short} | nothing measured | no factors | training mean |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for f in report.folds:
            m = [scores(getattr(f, v), f.rows.speed)["mae"] for v in
                 ("predicted", "predicted_blind", "predicted_global", "predicted_mean")]
            lines.append(f"| {f.workload} | {len(f.rows.speed):,} | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.3f} | {m[3]:.3f} |")
    return lines


def _parameter_lines(report: FitReport) -> list[str]:
    """How well the single-job stage fits, the plot, and every fitted parameter."""
    c = report.calibration.constants
    solo = report.solo
    lines = [
        "",
        (f"Single-job stage against the {solo['configurations']} measured configurations: GPU utilization off by "
         f"{solo['util_mae_points']:.1f} points on average,"),
        (f"memory-bandwidth utilization by {solo['mem_util_mae_points']:.1f} points, memory by "
         f"{solo['memory_median_relative_error']:.1%} and throughput by "
         f"{solo['throughput_median_relative_error']:.1%} (medians of the relative errors)."),
        "",
        "![predicted vs measured](fit.png)",
        "",
        "## Parameters",
        "",
        (f"Shared: CUDA context and libraries {c.context_mib:,.0f} MiB; under AMP host time x{c.amp_host:.2f}, "
         f"fixed GPU time x{c.amp_fixed:.2f}, activations x{c.amp_activations:.2f}, bandwidth "
         f"x{c.amp_bandwidth:.2f}; overlap exponent {c.overlap:.1f}."),
        "",
        "| workload | data set | sensitivity | intensity | sync ms | host ms | fixed ms | per-sample us | AMP gain | static MiB | MiB/sample |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for w in report.calibration.workloads:
        lines.append(f"| {w.model} | {w.dataset} | {w.sensitivity:.2f} | {w.intensity:.2f} | {w.sync_ms:.2f} | "
                     f"{w.host_ms:.2f} | {w.fixed_ms:.2f} | {w.per_sample_us:.1f} | {w.amp_gain:.2f} | "
                     f"{w.static_mib:,.0f} | {w.act_mib:.2f} |")
    return lines


def report_markdown(report: FitReport) -> str:
    """The fit report (``README.md`` beside ``parameters.json``)."""
    c = report.calibration.constants
    rows = report.rows
    facts = report.data
    measured_mean = float(rows.speed.mean())
    lines = [
        "# Calibrated colocation model (fitted to public measurements, not measured by us)",
        "",
        "The simulator's default colocation model, except on a GPU type our profiler measured",
        "(`traces/profiles/measured/<gpu>/`): there its measurements answer first, then this model refitted to them.",
        "`parameters.json` holds the fitted parameters (no measured table is copied here); the model is",
        "`simcluster/colocation/calibrated.py`, the fit `simcluster/colocation/calibrate.py`. Regenerate this",
        "folder (parameters, this report, `fit.png`) with",
        "",
        "    SIMCLUSTER_DATA=/path/to/shared/data python -m simcluster.colocation.calibrate",
        "",
        "## Data",
        "",
        "- **Fitted to** Lucid's RTX 3090 tables (ASPLOS'23 artifact; S-Lab License 1.0, non-commercial research):",
        (f"  {facts['configurations']} single-job configurations of {facts['workloads']} workloads, and "
         f"{len(rows.speed) // 2:,} pairs sharing one GPU"),
        (f"  ({len(rows.speed):,} speeds, {facts['paired_workloads']} workloads; {_names(facts['never_paired'])} "
         f"{'was' if len(facts['never_paired']) == 1 else 'were'} never measured in pairs)."),
        (f"  Speeds are clamped to [{FLOOR}, {CEILING:g}] as the simulator clamps them ({facts['above_one']:.0%} "
         "of the measured ones exceed 1:"),
        "  noise in the solo baselines).",
        "- **Checked against** Gavel's throughputs (OSDI'20; MIT): see the last section.",
        "",
        "## The model",
        "",
        "Single jobs: a step-time model per workload (`gpu_ms = fixed + per_sample x batch`, `step = sync +",
        "smoothmax(host, gpu_ms)`, `util = gpu_ms / step`, memory `context + static + per-sample x batch`), its",
        "parameters fitted to the single-job table, pulled towards our prior assumptions",
        "(`simcluster/colocation/analytic.py`) so unmeasured configurations stay plausible.",
        "",
        "Pairs: job *i* beside job *j* (utilizations as fractions) runs at",
        "",
        "    speed_i = 1 / (1 + kappa * sensitivity_i * intensity_j * u_i^a * u_j^b)",
        "",
        f"with kappa = {c.kappa:.3f}, a = {c.own_exponent:.3f}, b = {c.partner_exponent:.3f}: two fully busy jobs",
        (f"each run at {1 / (1 + c.kappa):.2f} of their solo speed (measured: {facts['busy_pair_speed']:.2f} on "
         f"average over the {facts['busy_pairs']} speeds of pairs of"),
        "jobs that each use the GPU 90 % of the time or more). The analytic model's max-min division of GPU time",
        "was the wrong form: it predicts no",
        "slowdown at all while the two utilizations add up to less than 100 %, where the measurements show a",
        "steady, smooth slowdown; refitting its interference constant cannot repair that (table below).",
        "`sensitivity` and `intensity` carry what utilization does not explain (1 for workloads never measured",
        "in pairs); weakly pulled towards 1 in the fit.",
        "",
        "## Figures",
        "",
        f"Mean absolute error of the pair speeds against the {len(rows.speed):,} measured ones (mean {measured_mean:.3f}),",
        "through the model as the simulator uses it (its tables and lookups, speeds clamped to (0, 1]).",
        "*Workload left out*: for each of the 11 workloads, the pair rule is refitted without any pair involving",
        "it, its factors set to 1, and its pairs predicted (a pair of two left-out workloads counts in both",
        "folds); its solo profile is known, as for BERT, ResNet50 and Transformer in the trace. *Nothing",
        "measured*: the single-job stage is refitted without its solo rows too, so it rests on our assumptions.",
        "",
    ]
    lines += _figure_lines(report)
    lines += _parameter_lines(report)
    if report.gavel:
        lines += [
            "",
            "## Gavel: the interference constant on other GPUs",
            "",
            "Gavel's tables hold no utilization, so its pairs cannot be put through the rule in general. Two copies",
            "of a job that keeps the GPU busy each run at `1 / (1 + kappa)`, though, so `1 / speed - 1` of its",
            "single-GPU self-pairs estimates kappa (lighter jobs give less):",
            "",
            "| GPU | self-pairs | implied kappa, median (quartiles) | combined throughput of all pairs, median |",
            "|---|---:|---|---:|",
        ]
        for g in report.gavel:
            lines.append(f"| {g['gpu']} | {g['self_pairs']} | {g['kappa_median']:.2f} ({g['kappa_q1']:.2f}-"
                         f"{g['kappa_q3']:.2f}) | {g['combined_median']:.2f} |")
        lines += [
            f"| RTX 3090 (this fit) | | {c.kappa:.2f} | {2 / (1 + c.kappa):.2f} for two busy jobs |",
            "",
            "Older GPUs time-slice busy jobs (kappa near 1: half speed each, no gain from sharing); newer ones",
            "overlap them.",
        ]
        by_gpu = {g["gpu"]: g["kappa_median"] for g in report.gavel}
        if "p100" in by_gpu and "v100" in by_gpu:
            low, high = sorted((by_gpu["p100"], by_gpu["v100"]))
            lines[-1] += (" The RTX 3090's fitted constant lies between the P100's and the V100's, as its "
                          "generation suggests: the two data sets tell one story." if low <= c.kappa <= high else
                          " The RTX 3090's fitted constant does not lie between the P100's and the V100's: the two "
                          "data sets disagree here.")
        lines += [("It is not fitted to Gavel: the trace's job durations come from RTX 3090s, and a model for another "
                  "GPU should be calibrated (or measured) on that GPU.")]
    return "\n".join(lines) + "\n"


def refit_markdown(report: FitReport) -> str:
    """The report of a refit to our own measurements on one GPU type (``README.md`` beside its parameters)."""
    c = report.calibration.constants
    rows = report.rows
    facts = report.data
    gpu = report.subject.gpu
    tables = report.calibration.fitted_to.get("gpu", "<gpu>")
    figures = report.calibration.fit
    held = [f"{figures['mae_leave_one_workload_out']:.3f} for a workload left out"] if report.folds else []
    if report.pair_held_out is not None:
        held.append(f"{figures['mae_leave_one_pair_out']:.3f} for a pair left out")
    lines = [
        f"# The calibrated colocation model refitted to our measurements on {gpu}",
        "",
        f"The colocation model's second step for runs on `{tables}` GPUs (`--cluster {tables}:N`, or",
        f"`--colocation default@{tables}`): a pair measured there (`../pair.csv`) is answered by its",
        "measurement, any other pair by this refit of the calibrated model (`../../../calibrated/`, fitted to",
        "Lucid's RTX 3090 measurements) to the tables beside it. `parameters.json` holds the parameters; the",
        "fit is `simcluster/colocation/calibrate.py`. Regenerate this folder (parameters, this report, `fit.png`)",
        "with",
        "",
        f"    python -m simcluster.colocation.calibrate --tables traces/profiles/measured/{tables}",
        "",
        "## Data",
        "",
        (f"- **Fitted to** our profiler's tables measured on {gpu}: {facts['configurations']} single-job "
         f"configurations of {facts['workloads']} workloads,"),
        (f"  {len(rows.speed) // 2:,} pairs sharing one GPU ({len(rows.speed):,} speeds, "
         f"{facts['paired_workloads']} workloads; "
         + (f"{_names(facts['never_paired'])} {'was' if len(facts['never_paired']) == 1 else 'were'} never "
            "measured in pairs)." if facts["never_paired"] else "every workload was measured in pairs).")),
        (f"  Speeds are clamped to [{FLOOR}, {CEILING:g}] as the simulator clamps them ({facts['above_one']:.0%} "
         "of the measured ones exceed 1)."),
        ("- **Pulled towards** the RTX 3090 calibration: every parameter starts there and costs as much to move "
         "as it did"),
        ("  from our assumptions in that fit; configurations never measured on this GPU (other batch sizes, AMP) "
         "keep its"),
        "  shape, scaled to this GPU's measurements.",
        "",
        "## The model",
        "",
        "The calibrated model's rule, job *i* beside job *j* (utilizations as fractions):",
        "",
        "    speed_i = 1 / (1 + kappa * sensitivity_i * intensity_j * u_i^a * u_j^b)",
        "",
        (f"refitted: kappa = {c.kappa:.3f}, a = {c.own_exponent:.3f}, b = {c.partner_exponent:.3f} (two fully "
         f"busy jobs each at {1 / (1 + c.kappa):.2f} of their"),
        (f"solo speed; measured: {facts['busy_pair_speed']:.2f} over the {facts['busy_pairs']} speeds of pairs "
         "of jobs that each use the GPU 90 % of the time or more)." if facts["busy_pairs"] else
         "solo speed; no pair of two jobs that each use the GPU 90 % of the time or more was measured)."),
        "",
        "## Figures",
        "",
        (f"Mean absolute error of the pair speeds against the {len(rows.speed):,} measured ones "
         f"(mean {float(rows.speed.mean()):.3f}): {figures['mae_in_sample']:.3f} in-sample, "
         f"{', '.join(held) or 'no held-out check run'}."),
        "*Pair left out*: stage 2 refitted without the pair, both workloads' factors known: what a pair of",
        "measured workloads that the profiler did not run together meets. *Workload left out*: the pair rule",
        "refitted without any pair involving the workload, its factors 1, its pairs predicted; *nothing",
        "measured*: its solo rows left out of stage 1 too.",
    ]
    if facts.get("in_every_pair"):
        every = facts["in_every_pair"]
        lines.append(f"{_names(every)} {'is' if len(every) == 1 else 'are'} in every measured pair: without "
                     f"{'it' if len(every) == 1 else 'them'} nothing is left to refit on, so no fold leaves "
                     f"{'it' if len(every) == 1 else 'them'} out.")
    lines.append("")
    lines += _figure_lines(report, fitted=f"refitted to {tables}", short="refitted")
    lines += _parameter_lines(report)
    return "\n".join(lines) + "\n"
