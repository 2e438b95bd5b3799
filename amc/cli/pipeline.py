"""Pipeline commands: ``amc collect | evaluate | promote | report | results-doc | calibrate``.

Each loads ``params.yaml`` (``--params``; ``-S key=value`` overrides on top) through the one
loader and calls the stage module's ``run`` (:mod:`amc.pipeline`), then prints a table; nothing
else happens here. Overrides isolate the run: its outputs go under ``runs/overrides-<hash>/``
and its model gets its own registry name (:mod:`amc.pipeline.params`). ``dvc.yaml`` runs the
same functions as ``python -m amc.pipeline.<stage>``.
"""

from __future__ import annotations

from pathlib import Path

import typer

from amc.cli.errors import friendly_errors
from amc.pipeline.params import PARAMS_FILE, PipelineParams, load_params

_PARAMS = typer.Option(PARAMS_FILE, "--params", "-p", help="Pipeline params file.")
_SET = typer.Option([], "--set", "-S", help="Override: key=value (repeatable).")


def _load(params: Path, set_: list[str]) -> PipelineParams:
    from amc.progress import quiet_libraries

    quiet_libraries()  # as in a DVC stage: the stage's own lines and bars only
    return load_params(params, set_)


@friendly_errors
def collect_cmd(params: Path = _PARAMS, set_: list[str] = _SET,
                quiet: bool = typer.Option(False, help="No progress bars.")) -> None:
    """Collect prior rollouts (Best-of-G) on the train split; resumes an interrupted run."""
    from amc.pipeline import collect

    res = collect.run(_load(params, set_), progress=not quiet)
    typer.echo(f"collected {res.records} task records over {res.tasks} tasks -> {res.out_dir}")


@friendly_errors
def evaluate_cmd(params: Path = _PARAMS, set_: list[str] = _SET,
                 quiet: bool = typer.Option(False, help="No progress bars.")) -> None:
    """Evaluate ReAct, Best-of-N, SMC and AMC (challenger, champion) over the N grid."""
    from amc.pipeline import evaluate
    from amc.reports.table import format_table

    p = _load(params, set_)
    ev = evaluate.run(p, progress=not quiet)
    typer.echo(format_table([{"method": s, **m} for s, m in ev["methods"].items()]))
    typer.echo(f"\n{ev['status']}: {evaluate.record_path(p)}")


@friendly_errors
def promote_cmd(params: Path = _PARAMS, set_: list[str] = _SET) -> None:
    """The gate: promote the challenger when a one-sided paired test on the frozen evaluation
    set beats the champion (params.yaml `promote`: level, minimum effect, guards that veto)."""
    from amc.pipeline import promote

    d = promote.run(_load(params, set_))
    typer.echo(f"{'PROMOTED' if d['promote'] else 'kept'}: {d['reason']}")


@friendly_errors
def report_cmd(params: Path = _PARAMS, set_: list[str] = _SET,
               calibrate: bool = typer.Option(True, help="Score states for calibration.")
               ) -> None:
    """Plots (success vs N, cost-quality, genealogy, calibration) and summary.json."""
    from amc.pipeline import report
    from amc.reports.table import format_table

    p = _load(params, set_)
    s = report.run(p, calibrate=calibrate)
    order = ("react", "bon", "smc", "amc", "champion")
    rows = sorted(s["methods"].items(), key=lambda kv: (kv[1]["n"], order.index(kv[1]["role"])))
    typer.echo(format_table([{"method": k, **m} for k, m in rows]))
    if s["promotion"]:
        pr = s["promotion"]
        typer.echo(f"\npromotion: {'PROMOTED' if pr['promote'] else 'kept'} ({pr['reason']}); "
                   f"champion = v{pr['champion_after']}")
    typer.echo(f"plots: {p.report.plots_dir}  summary: {p.report.summary_file}")


@friendly_errors
def results_doc_cmd(
    params: Path = _PARAMS, set_: list[str] = _SET,
    out: Path = typer.Option(Path("docs/results.md"), help="Document to write."),
    title: str = typer.Option("Results", help="Document title."),
    extra: list[str] = typer.Option(
        [], "--extra", help="TITLE=PATH: add a configuration run by `amc run` (its "
        "summary.json) as its own section (repeatable)."),
    intro: str | None = typer.Option(None, help="Paragraph under the title."),
    grpo: str | None = typer.Option(
        None, "--grpo", help="FROZEN,POLICY,METRICS: summary.json of `amc run` with the frozen "
        "prior, the same with the GRPO policy, and `amc grpo`'s metrics.json (Table 11)."),
    summary_path: Path | None = typer.Option(
        None, "--summary", help="Pipeline summary to read instead of report.summary_file "
        "(e.g. docs/results-assets/summary.json: regenerate from the committed copies)."),
    plots: Path | None = typer.Option(
        None, "--plots-dir", help="Plots to include instead of report.plots_dir."),
    section: list[str] = typer.Option(
        [], "--section", help="TITLE=FILE.md: a generated markdown section (e.g. a study's "
        "table), placed first, verbatim (repeatable)."),
    summary_title: str | None = typer.Option(
        None, help="Heading of the pipeline summary's section."),
) -> None:
    """Generate docs/results.md (tables, plots, reading) from the report's metrics."""
    from amc.reports.results_doc import write_results_doc

    p = _load(params, set_)
    summary_file = summary_path or Path(p.report.summary_file)
    summary: Path | None = summary_file
    grpo_paths = None
    if grpo is not None:
        grpo_paths = tuple(Path(x) for x in grpo.split(","))
        if len(grpo_paths) != 3 or not all(x.is_file() for x in grpo_paths):
            raise ValueError(f"--grpo {grpo!r}: need FROZEN,POLICY,METRICS of existing files")
    if summary_path is not None and not summary_path.is_file():
        raise FileNotFoundError(f"--summary {summary_path}: file not found")
    mds = []
    for item in section:
        sec_title, sep, path = item.rpartition("=")
        if not sep or not sec_title or not Path(path).is_file():
            raise ValueError(f"--section {item!r}: need TITLE=FILE of an existing markdown file")
        mds.append((sec_title, Path(path)))
    if not summary_file.is_file():
        if not extra and grpo_paths is None and not mds:
            raise FileNotFoundError(f"{summary_file} not found: run `amc report` first (or give "
                                    "--extra TITLE=PATH for runs of `amc run`)")
        summary = None
    sections = []
    for item in extra:
        sec_title, sep, path = item.rpartition("=")
        if not sep or not sec_title or not Path(path).is_file():
            raise ValueError(f"--extra {item!r}: need TITLE=PATH of an existing summary.json")
        sections.append((sec_title, path))
    written = write_results_doc(summary, plots or p.report.plots_dir, out, title=title,
                                extra=sections, intro=intro,
                                grpo=grpo_paths,  # type: ignore[arg-type]  # 3 checked above
                                summary_title=summary_title, sections=mds)
    typer.echo(f"wrote {written}")


@friendly_errors
def calibrate_cmd(
    results: Path = typer.Argument(..., help="Folder of bon@G results (e.g. data/trajectories)."),
    k_lo: int = typer.Option(4, help="The small Best-of-k."),
    k_hi: int = typer.Option(15, help="The large Best-of-k (<= rollouts per task)."),
    threshold: float = typer.Option(1.0, help="Total reward counted as a success."),
    margin: float = typer.Option(0.1, help="Best-of-k_hi - Best-of-k_lo that makes a mix "
                                 "unsaturated."),
    budget: int | None = typer.Option(
        None, help="Count successes within the first BUDGET steps (a shorter budget from the "
        "same rollouts; default: the rollouts' own)."),
    out: Path | None = typer.Option(None, help="Also write the calibration here (JSON)."),
) -> None:
    """Is a task mix saturated for the prior? Best-of-k from the collected rollouts."""
    from amc.monitor.calibrate import calibrate, format_calibration, read_results
    from amc.results import write_json_atomic

    c = calibrate(read_results(results), k_lo=k_lo, k_hi=k_hi, threshold=threshold,
                  margin=margin, budget=budget)
    typer.echo(format_calibration(c))
    if out is not None:
        write_json_atomic(out, {"results": str(results), **c.to_dict()})
        typer.echo(f"wrote {out}")
