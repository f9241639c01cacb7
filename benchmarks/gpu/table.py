"""The suite's final tables, built from its result records (so ``--from-records`` can rebuild
them from files fetched back from a GPU machine).

Training: per model, batch, precision and backend the medians over repetitions of the runner's
and the raw loop's images/sec, the median of the paired ratios (runner / raw of the same
repetition), MFU of each arm, and the coefficient of variation over repetitions. Claims: one
row per seed claim measured, with the paper's statement beside it.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

RATIO_GOAL = 0.98  # the runner >= 0.98x the raw loop of the same graph, on every row
CV_GOAL = 0.01
STRETCH_IPS = 2800.0  # bf16 ResNet-50 images/sec on an H100 (stretch)


def _med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _cv(xs: list[float]) -> float | None:
    if len(xs) < 2 or statistics.fmean(xs) == 0:
        return None
    return statistics.stdev(xs) / statistics.fmean(xs)


def _f(x: float | None, fmt: str = "{:.1f}") -> str:
    return "-" if x is None else fmt.format(x)


def _get(m: dict[str, Any], *names: str) -> float | None:
    """The first of ``names`` in ``m`` (the scenarios' metric names and the report's aliases)."""
    for n in names:
        if isinstance(m.get(n), int | float):
            return float(m[n])
    return None


def gpu_name(records: list[dict[str, Any]]) -> str | None:
    """The first GPU's NVML name in the records' fingerprints (None: no GPU seen)."""
    for r in records:
        gpus = ((r.get("fingerprint") or {}).get("gpu") or {}).get("gpus") or []
        if gpus and gpus[0].get("name"):
            return str(gpus[0]["name"])
    return None


def training_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per model, batch, size, precision and backend. MFU twice: over the bf16 matmul
    peak measured in the run (``runner_mfu``, ``raw_mfu``) and over the card's data-sheet dense
    bf16 peak (``*_mfu_sheet``; None where the card is not in peak.DATASHEET_BF16_DENSE)."""
    from benchmarks.gpu.peak import datasheet_peak

    sheet = datasheet_peak(gpu_name(records))
    groups: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        p = r.get("params") or {}
        if not r["experiment"].startswith("train-") or r["status"] != "ok":
            continue
        key = (
            r["model"],
            r.get("batch_size"),
            p.get("image_size"),
            p.get("precision"),
            p.get("backend"),
        )
        g = groups[key]
        m = r.get("metrics") or {}
        arm = p.get("arm_kind")
        if r.get("images_per_sec"):
            g[f"{arm}_ips"].append(float(r["images_per_sec"]))
        if "mfu" in m:
            g[f"{arm}_mfu"].append(float(m["mfu"]))
        if sheet and isinstance(m.get("train_tflops"), int | float):
            g[f"{arm}_mfu_sheet"].append(float(m["train_tflops"]) / sheet[1])
        if arm == "runner" and "runner_over_raw_ratio" in m:
            g["ratio"].append(float(m["runner_over_raw_ratio"]))
    rows = []
    for (model, batch, size, prec, backend), g in sorted(groups.items(), key=lambda kv: str(kv[0])):
        ratio = _med(g["ratio"])
        goal = "-"
        if ratio is not None:
            goal = "met" if ratio >= RATIO_GOAL else "missed"
            cv = _cv(g["runner_ips"])
            if cv is not None and cv > CV_GOAL:
                goal += f" (CV {cv:.1%} > 1%)"
            ips = _med(g["runner_ips"])
            if model == "resnet50" and prec == "bf16" and ips is not None:
                goal += f"; {STRETCH_IPS:,.0f} img/s {'met' if ips >= STRETCH_IPS else 'missed'}"
        rows.append(
            {
                "model": model,
                "batch": batch,
                "image_size": size,
                "precision": prec,
                "backend": backend,
                "runner_ips": _med(g["runner_ips"]),
                "raw_ips": _med(g["raw_ips"]),
                "ratio": ratio,
                "runner_mfu": _med(g["runner_mfu"]),
                "raw_mfu": _med(g["raw_mfu"]),
                "runner_mfu_sheet": _med(g["runner_mfu_sheet"]),
                "raw_mfu_sheet": _med(g["raw_mfu_sheet"]),
                "sheet_peak": f"{sheet[0]} {sheet[1]:g} TFLOP/s" if sheet else None,
                "runner_cv": _cv(g["runner_ips"]),
                "raw_cv": _cv(g["raw_ips"]),
                "repeats": len(g["runner_ips"]),
                "goal": goal,
            }
        )
    return rows


def claim_rows(records: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(claim, measured, paper) rows for the seed claims and the bf16 peak."""
    out: list[tuple[str, str, str]] = []
    for r in records:
        m, exp = r.get("metrics") or {}, r["experiment"]
        if r["status"] != "ok":
            continue
        if exp.startswith("peak-bf16-"):
            for k, v in m.items():
                if k.endswith(".tflops"):
                    out.append(
                        (
                            f"bf16 matmul peak ({r['params'].get('framework')}, "
                            f"n={r['params'].get('n')})",
                            f"{v:.4g} TFLOP/s",
                            "H100 SXM about 750-800 TFLOP/s dense",
                        )
                    )
        elif r["scenario"] == "sharing":
            out.append(
                (
                    f"{r['params'].get('jobs', '?')} concurrent jobs vs 1 "
                    f"({r['model']} b{r.get('batch_size')})",
                    f"aggregate {_f(m.get('aggregate_images_per_sec'))} img/s = "
                    f"{_f(_get(m, 'aggregate_throughput_ratio', 'throughput_ratio'), '{:.2f}')}"
                    f"x one job; slowest takes "
                    f"{_f(m.get('completion_time_ratio'), '{:.2f}')}x its time",
                    "4 jobs: about 3x throughput, 1.17x completion time",
                )
            )
        elif r["scenario"] == "shared":
            out.append(
                (
                    f"background {r['params'].get('background_model')} "
                    f"b{r['params'].get('background_batch')} vs foreground {r['model']} "
                    f"b{r.get('batch_size')}",
                    f"{_f(_get(m, 'images_per_sec_alone', 'alone_images_per_sec'))} -> "
                    f"{_f(_get(m, 'images_per_sec_shared', 'shared_images_per_sec'))} img/s "
                    f"({_f(m.get('images_per_sec_degradation'), '{:.0%}')} lower), elapsed "
                    f"+{_f(_get(m, 'elapsed_degradation', 'elapsed_increase'), '{:.0%}')}",
                    "batch-32 models within 15-20 %; AlexNet b512 elapsed > +30 %",
                )
            )
        elif r["model"] == "bandwidth":
            out.extend(_bandwidth_rows(r))
        elif r["model"] == "rnn":
            for k, v in sorted(m.items()):
                if k.endswith(".gru_over_lstm_time_ratio"):
                    out.append(
                        (
                            f"DeepBench GRU vs LSTM {k.split('.')[0]} (train)",
                            f"GRU takes {v:.2f}x the LSTM's time per call",
                            "GRU slower in a container than on the host (launch-bound)",
                        )
                    )
        elif exp == "mnist-wallclock":
            out.append(
                (
                    f"MNIST CNN wall-clock (b{r.get('batch_size')}, {r.get('steps')} steps)",
                    f"{_f(r.get('elapsed_s'), '{:.1f}')} s job, "
                    f"{_f(r.get('images_per_sec'))} img/s",
                    "no measurable penalty in a vGPU VM (compare arms)",
                )
            )
    return out


def _bandwidth_rows(r: dict[str, Any]) -> list[tuple[str, str, str]]:
    res = (r.get("params") or {}).get("results") or []
    if not res:
        return []
    top = max(x["shape"]["bytes"] for x in res)
    rows = []
    for direction in ("h2d", "d2h"):
        vals = {
            x["shape"]["affinity"]: x["gbps"]
            for x in res
            if x["shape"]["bytes"] == top and x["shape"]["direction"] == direction
        }
        if vals:
            text = ", ".join(f"{k} {v:.2f}" for k, v in vals.items())
            rows.append(
                (
                    f"host-device bandwidth {direction} {top >> 20 or top} "
                    f"{'MiB' if top >> 20 else 'B'} by CPU affinity",
                    f"{text} GB/s ({res[0]['shape'].get('backend')})",
                    "remote socket considerably lower; pinning to the GPU's node restores",
                )
            )
    return rows


def failed_rows(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for r in records:
        if r["status"] == "ok":
            continue
        batch = f"b{r['batch_size']}" if r.get("batch_size") else ""
        what = " ".join(
            x
            for x in (
                r["experiment"],
                r["model"],
                batch,
                (r.get("params") or {}).get("variant", ""),
            )
            if x
        )
        out.append((what, str(r.get("error"))[:160]))
    return out


def render(records: list[dict[str, Any]], console: Any, device: str = "") -> None:
    """Print the tables: failures (if any), claims, then training (last)."""
    from rich.table import Table

    fails = failed_rows(records)
    if fails:
        t = Table(title="failed measurements")
        t.add_column("what")
        t.add_column("error", overflow="fold")
        for row in fails:
            t.add_row(*row)
        console.print(t)
    claims = claim_rows(records)
    if claims:
        t = Table(title="seed claims on one host")
        for col in ("claim", "measured", "paper"):
            t.add_column(col, overflow="fold")
        for row in claims:
            t.add_row(*row)
        console.print(t)
    rows = training_rows(records)
    sheet = next((r["sheet_peak"] for r in rows if r["sheet_peak"]), None)
    t = Table(
        title=f"runner vs raw framework loop{' on ' + device if device else ''} "
        f"(medians over repeats; MFU = 6 x MACs x img/s / the bf16 matmul peak measured in the "
        f"run; sheet: / {sheet or 'no data-sheet peak for this card'} dense bf16)"
    )
    for col in (
        "model",
        "px",
        "batch",
        "prec",
        "backend",
        "runner img/s",
        "raw img/s",
        "runner/raw",
        "MFU runner",
        "MFU raw",
        "MFU runner sheet",
        "MFU raw sheet",
        "CV runner",
        "n",
        f"goal >= {RATIO_GOAL}x",
    ):
        t.add_column(col, justify="left" if col in ("model", "prec", "backend") else "right")
    cpu = device.startswith("CPU only")
    for row in rows:
        if cpu and row["goal"] != "-":
            row["goal"] = "n/a on CPU"  # the goals are GPU goals
        t.add_row(
            row["model"],
            str(row["image_size"] or "-"),
            str(row["batch"]),
            str(row["precision"]),
            str(row["backend"]),
            _f(row["runner_ips"]),
            _f(row["raw_ips"]),
            _f(row["ratio"], "{:.3f}"),
            _f(row["runner_mfu"], "{:.1%}"),
            _f(row["raw_mfu"], "{:.1%}"),
            _f(row["runner_mfu_sheet"], "{:.1%}"),
            _f(row["raw_mfu_sheet"], "{:.1%}"),
            _f(row["runner_cv"], "{:.1%}"),
            str(row["repeats"]),
            row["goal"],
        )
    console.print(t)
