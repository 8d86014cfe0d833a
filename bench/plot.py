#!/usr/bin/env python3
"""bench/plot.py RAW_DIR RESULTS_DIR [scenario...]: PNG plots from RESULTS_DIR/<scenario>.json
(written by bench/report.py): cache.png and contention.png (bar charts), timeline.png,
sweep.png, cachefull.png, evict.png, database.png, cpu.png. Needs matplotlib (Debian: python3-matplotlib)."""
import json
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NOTE = "QEMU TCG: SSD floor ~1 ms per sync 4 KiB I/O; SSD/HDD contrast ~7x (not ~70x)"
PATTERNS = ["seqread", "seqwrite", "randread", "randwrite"]


# A scenario's plot: the function named after it (bench/scenarios/<name>.sh).
PLOTTERS = {}


def plotter(fn):
    PLOTTERS[fn.__name__] = fn
    return fn


def load(out, scen):
    p = os.path.join(out, scen + ".json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def footer(fig, res, extra=""):
    m = res.get("meta", {})
    h = m.get("host", {})
    load = ""
    if h.get("samples"):
        load = f"; other QEMU guests {h['other_qemu_min']}..{h['other_qemu_max']}"
    fig.text(0.01, 0.01, f"{NOTE}. Kernel {m.get('kernel', '?')}, module {m.get('module', '?')}, "
             f"{'QUICK, ' if m.get('quick') else ''}{extra or 'median of ' + str(m.get('reps', '?'))}{load}",
             fontsize=7)


def save(fig, out, name):
    fig.savefig(os.path.join(out, name), dpi=100)
    plt.close(fig)


@plotter
def cache(res, out):
    cfgs = list(res["configs"])
    wls = ["w3g", "r3g", "wrand", "rrand"]
    fig, axes = plt.subplots(1, 4, figsize=(14, 4))
    for ax, w in zip(axes, wls):
        vals = [res["configs"][c][w]["median_s"] or 0 for c in cfgs]
        ax.bar(range(len(cfgs)), vals, color=["#888" if c.startswith("raw") else "#3a7" if c == "ssdprio"
                                              else "#47b" for c in cfgs])
        ax.set_xticks(range(len(cfgs)))
        ax.set_xticklabels(cfgs, rotation=45, ha="right", fontsize=8)
        ax.set_title(w)
        ax.set_ylabel("seconds (median)")
    fig.suptitle("Cache workloads: time (lower is better)")
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    save(fig, out, "cache.png")


@plotter
def contention(res, out):
    cfgs = list(res["configs"])
    pats = [p for p in PATTERNS if any(p in res["configs"][c] for c in cfgs)]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(14, 4.8))
    width = 0.8 / max(len(cfgs), 1)
    for i, c in enumerate(cfgs):
        xs = [j + i * width for j in range(len(pats))]
        r = [100 * (res["configs"][c].get(p, {}).get("ratio") or 0) for p in pats]
        idle = [res["configs"][c].get(p, {}).get("idle_mbps") or 0 for p in pats]
        a1.bar(xs, r, width, label=c)
        a2.bar(xs, idle, width, label=c)
    for a in (a1, a2):
        a.set_xticks([j + 0.4 - width / 2 for j in range(len(pats))])
        a.set_xticklabels(pats)
    a1.axhline(95, color="k", ls="--", lw=0.8)
    a1.axhline(100, color="#aaa", ls=":", lw=0.8)
    a1.set_ylabel("normal throughput with idle / alone (%)")
    a2.set_ylabel("idle reader MB/s while the normal job runs (median)")
    a2.set_yscale("symlog", linthresh=0.1)
    a1.legend(fontsize=7)
    fig.suptitle("Contention: normal job vs a concurrent ionice -c3 sequential reader (dashed: 95% goal)")
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    save(fig, out, "contention.png")


@plotter
def timeline(res, out):
    cfgs = [c for c in res["configs"] if "plot" in res["configs"][c]]
    if not cfgs:
        return
    fig, axes = plt.subplots(len(cfgs), 1, figsize=(10, 3.0 * len(cfgs)), squeeze=False, sharex=True)
    for ax, c in zip(axes[:, 0], cfgs):
        p = res["configs"][c]["plot"]
        for key, lab in (("normal", "normal"), ("idle", "idle (ionice -c3)")):
            pts = p[key]
            ax.step([x[0] for x in pts], [x[1] for x in pts], where="pre", marker=".", label=lab)
        n1 = p["normal_end"]
        ax.axvline(n1, color="k", ls=":", lw=0.8)
        ax.axvspan(n1, n1 + p["batch_mode_delay_s"], color="#ddd", alpha=0.5, label="batch_mode_delay")
        ax.set_title(f"{c}" + (f" (idle_dispatch_interval {p['idle_dispatch_interval_ms']} ms, "
                               f"batch_mode_delay {p['batch_mode_delay_s']} s)" if "ssdprio" in c else ""),
                     fontsize=9)
        ax.set_ylabel("MB/s")
        ax.legend(fontsize=7)
    axes[-1, 0].set_xlabel("seconds")
    footer(fig, res, "one run per config")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    save(fig, out, "timeline.png")


@plotter
def sweep(res, out):
    pts = res.get("points") or []
    if not pts:
        return
    xs = [p["interval_ms"] for p in pts]
    fig, a1 = plt.subplots(figsize=(8, 4.5))
    a1.plot(xs, [p["idle_mbps"] or 0 for p in pts], "o-", color="#c52", label="idle reader MB/s")
    a1.set_xlabel("idle_dispatch_interval (ms)")
    a1.set_ylabel("idle reader MB/s during normal load", color="#c52")
    a1.set_xscale("symlog", linthresh=50)
    a1.set_xticks(xs)
    a1.set_xticklabels([str(x) for x in xs])
    a2 = a1.twinx()
    a2.plot(xs, [p["normal_lat_p99_ms"] or 0 for p in pts], "s--", color="#247", label="normal p99 ms")
    a2.plot(xs, [p["normal_lat_mean_ms"] or 0 for p in pts], "^:", color="#247", label="normal mean ms")
    bl = res.get("baseline", {})
    if bl.get("normal_lat_p99_ms"):
        a2.axhline(bl["normal_lat_p99_ms"], color="#247", lw=0.6, ls="-", label="normal p99 alone")
    a2.set_ylabel("normal job latency (ms)", color="#247")
    a2.set_ylim(bottom=0)
    h1, l1 = a1.get_legend_handles_labels()
    h2, l2 = a2.get_legend_handles_labels()
    a1.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")
    fig.suptitle("Knob sweep: idle throughput vs idle_dispatch_interval (normal: 4 KiB randread + 20 ms think)",
                 fontsize=10)
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    save(fig, out, "sweep.png")


@plotter
def cachefull(res, out):
    cfgs = list(res["configs"])
    pats = sorted({p for c in cfgs for p in res["configs"][c]})
    if not pats:
        return
    fig, axes = plt.subplots(1, len(pats), figsize=(6 * len(pats), 4), squeeze=False)
    for ax, p in zip(axes[0], pats):
        for c in cfgs:
            d = res["configs"][c].get(p)
            if not d or not d["series"]:
                continue
            s = d["series"][0]
            ax.step([x[0] for x in s], [x[1] for x in s], where="pre", marker=".",
                    label=f"{c} (median {d['mbps']:.2f} MB/s)")
        ax.set_title(f"{p} writes after the cache filled with dirty data", fontsize=9)
        ax.set_xlabel("seconds")
        ax.set_ylabel("MB/s (1 s)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7)
    footer(fig, res, "first repetition shown")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    save(fig, out, "cachefull.png")


@plotter
def evict(res, out):
    cfgs = [c for c in res["configs"] if "p99_per_second" in res["configs"][c]]
    if not cfgs:
        return
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
    for c in cfgs:
        d = res["configs"][c]
        pts = [x for x in d["p99_per_second"] if x[2] >= 10]
        a1.plot([x[0] for x in pts], [x[1] for x in pts], ".-", label=f"{c} p99 (whole run {d['lat_p99_ms']:.1f} ms)")
        st = [x for x in d["status"] if "dirty" in x]
        a2.plot([x["s"] for x in st], [x["dirty"] for x in st], "-", label=f"{c} dirty (4 KiB blocks)")
        if st and "written_back" in st[0]:
            a2.plot([x["s"] for x in st], [x["written_back"] for x in st], "--", label=f"{c} written back (cumulative)")
    a1.set_ylabel("normal job p99 latency per second (ms)")
    a1.set_yscale("log")
    a1.legend(fontsize=7)
    a2.set_ylabel("blocks")
    a2.set_xlabel("seconds (bursts of I/O separated by quiet gaps)")
    a2.legend(fontsize=7)
    fig.suptitle("Eviction under load: mixed 4 KiB random I/O over 3x the cache", fontsize=10)
    footer(fig, res, "one run per system")
    fig.tight_layout(rect=(0, 0.04, 1, 0.96))
    save(fig, out, "evict.png")

@plotter
def database(res, out):
    cfgs = [c for c in res["configs"] if res["configs"][c].get("plot", {}).get("tps")]
    if not cfgs:
        return
    fig, axes = plt.subplots(len(cfgs), 1, figsize=(10, 2.6 * len(cfgs)), squeeze=False, sharex=True)
    for ax, c in zip(axes[:, 0], cfgs):
        d = res["configs"][c]
        p = d["plot"]
        pts = p["tps"]
        ax.step([x[0] for x in pts], [x[1] for x in pts], where="pre", label="pgbench TPS")
        ax.axvspan(p["alone_start_s"], p["backup_start_s"], color="#cde", alpha=0.5, label="alone window")
        ax.axvspan(p["backup_start_s"], min(p["backup_end_s"], p["end_s"]), color="#fdc", alpha=0.5,
                   label="ionice -c3 backup running")
        if p["backup_end_s"] <= p["end_s"]:
            ax.axvline(p["backup_end_s"], color="k", ls=":", lw=0.8)
        ax.set_title(f"{c}: TPS beside/alone {100 * (d.get('tps_ratio') or 0):.0f}%, p99 "
                     f"{d.get('p99_alone_ms') or 0:.0f} -> {d.get('p99_beside_ms') or 0:.0f} ms, backup "
                     f"{d.get('backup_beside_s') or 0:.0f} s", fontsize=9)
        ax.set_ylabel("TPS")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="upper left")
    axes[-1, 0].set_xlabel("seconds since pgbench's first transaction")
    fig.suptitle("PostgreSQL pgbench TPS per second, alone then beside a backup")
    footer(fig, res, "repetition 1 per config")
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    save(fig, out, "database.png")


@plotter
def bursts(res, out):
    cfgs = [c for c in res["configs"] if res["configs"][c].get("burst_s")]
    if not cfgs:
        return
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(10, 8))
    w = 0.8 / len(cfgs)
    for k, c in enumerate(cfgs):
        t = res["configs"][c]["burst_s"]
        a1.bar([i + k * w for i in range(len(t))], t, width=w, label=c)
        s = res["configs"][c].get("bursts_dirty") or []
        a2.plot([x[0] for x in s], [100 * x[1] for x in s], "-", label=c)
        s = res["configs"][c].get("light_dirty") or []
        a3.plot([x[0] for x in s], [100 * x[1] for x in s], "-", label=c)
    a1.set_xlabel("burst")
    a1.set_ylabel("seconds (median)")
    a1.set_title("time per write burst (each new data, quiet gaps between)", fontsize=9)
    a2.set_ylabel("dirty % of cache")
    a2.set_xlabel("seconds (bursts, repetition 1)")
    a3.set_ylabel("dirty % of cache")
    a3.set_xlabel("seconds (light steady random writes, repetition 1)")
    for a in (a1, a2, a3):
        a.legend(fontsize=7)
    footer(fig, res, "medians over repetitions; series of repetition 1")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    save(fig, out, "bursts.png")


@plotter
def shift(res, out):
    cfgs = [c for c in res["configs"] if res["configs"][c].get("series")]
    if not cfgs:
        return
    fig, ax = plt.subplots(figsize=(10, 4))
    for c in cfgs:
        s = res["configs"][c]["series"]
        ax.plot([x[0] for x in s], [x[1] for x in s], ".-", label=c)
    ax.axvline(0, color="k", ls=":", lw=0.8)
    ax.set_xlabel("seconds since the hot set moved")
    ax.set_ylabel("read hit ratio (1 s)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    footer(fig, res, "repetition 1")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    save(fig, out, "shift.png")


@plotter
def think(res, out):
    cfgs = [c for c in res["configs"] if isinstance(res["configs"][c], dict)]
    marks = "os^vDP*X"
    colors = ["#c52", "#e93", "#a60", "#247", "#3a7", "#86b", "#888", "#444"]
    thinks = []
    for c in cfgs:
        thinks += [t for t in res["configs"][c] if t != "goals" and t not in thinks]
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for ci, c in enumerate(cfgs):
        for ti, t in enumerate(thinks):
            d = res["configs"][c].get(t)
            if not d or d.get("idle_share") is None or d.get("kept") is None:
                continue
            col, mk = colors[ci % len(colors)], marks[ti % len(marks)]
            ax.scatter([x["kept"] for x in d["per_run"] if x["idle_share"] is not None],
                       [x["idle_share"] for x in d["per_run"] if x["idle_share"] is not None],
                       color=col, marker=mk, s=12, alpha=0.4)
            ax.scatter([d["kept"]], [d["idle_share"]], color=col, marker=mk, s=60,
                       label=f"{c} {t}", edgecolors="k", linewidths=0.5)
    ax.axvline(0.97, color="k", ls=":", lw=0.8)
    ax.axhline(0.5, color="k", ls=":", lw=0.8)
    ax.axhline(0.8, color="k", ls="--", lw=0.6)
    ax.set_xlabel("kept: normal IOPS beside the idle reader / alone")
    ax.set_ylabel("idle share of the device time the normal job leaves")
    ax.legend(fontsize=6, ncol=2, loc="best")
    fig.suptitle("Think-time frontier (big: median; small: each repetition; goals: kept >= 0.97, "
                 "share >= 0.5 at 20 ms, 0.8 at 50 ms)", fontsize=9)
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    save(fig, out, "think.png")


@plotter
def cpu(res, out):
    cfgs = list(res["configs"])
    wls = ["readhit", "writehit", "newwrite", "readmiss"]
    groups = sorted({k for c in cfgs for k in res["configs"][c]},
                    key=lambda k: (wls.index(k.rsplit("_", 1)[0]), int(k.rsplit("_", 1)[1])))
    if not groups:
        return
    names = {"readhit": "read hits", "writehit": "write hits", "newwrite": "new blocks", "readmiss": "read misses"}
    # ssdprio's goals, drawn on its bar's group.
    iops_goal = {"readhit": 0.90, "writehit": 0.85}
    cpu_goal = {"newwrite": 1.5, "readmiss": 1.5}
    fig, (a1, a2) = plt.subplots(2, 1, figsize=(12, 7), sharex=True)
    width = 0.8 / max(len(cfgs), 1)
    for i, c in enumerate(cfgs):
        xs = [g + i * width for g in range(len(groups))]
        a1.bar(xs, [res["configs"][c].get(k, {}).get("iops_x_linear") or 0 for k in groups], width, label=c)
        a2.bar(xs, [res["configs"][c].get(k, {}).get("cpu_x_linear") or 0 for k in groups], width, label=c)
    for g, k in enumerate(groups):
        w = k.rsplit("_", 1)[0]
        for ax, goal in ((a1, iops_goal.get(w)), (a2, cpu_goal.get(w))):
            if goal:
                ax.hlines(goal, g - width / 2, g + 0.8 - width / 2, colors="k", linestyles="--", lw=0.8)
    for a in (a1, a2):
        a.axhline(1.0, color="#aaa", ls=":", lw=0.8)
        a.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))])
        a.set_xticklabels([f"{names[k.rsplit('_', 1)[0]]}\n{k.rsplit('_', 1)[1]} job(s)" for k in groups],
                          fontsize=8)
    a1.set_ylabel("IOPS / dm-linear's (higher is better)")
    a2.set_ylabel("CPU per I/O / dm-linear's (lower is better)")
    a1.legend(fontsize=7, ncol=len(cfgs))
    fig.suptitle("CPU cost per I/O on zero-latency legs, against dm-linear (dashed: ssdprio's goals)", fontsize=10)
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.04, 1, 0.96))
    save(fig, out, "cpu.png")


if __name__ == "__main__":
    out = sys.argv[2]
    for scen in sys.argv[3:]:
        res = load(out, scen)
        if res and scen in PLOTTERS and (res.get("configs") or res.get("points")):
            PLOTTERS[scen](res, out)
            print(f"plot: {out}/{scen}.png")
