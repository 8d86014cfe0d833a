#!/usr/bin/env python3
"""bench/plot.py RAW_DIR RESULTS_DIR [scenario...]: PNG plots from RESULTS_DIR/<scenario>.json
(written by bench/report.py): cache.png, contention.png (bar charts), timeline.png."""
import json
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NOTE = "QEMU TCG: SSD floor ~1 ms per sync 4 KiB I/O; SSD/HDD contrast ~7x (not ~70x)"


def load(out, scen):
    p = os.path.join(out, scen + ".json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def footer(fig, res):
    m = res.get("meta", {})
    fig.text(0.01, 0.01, f"{NOTE}. Kernel {m.get('kernel', '?')}, "
             f"{'QUICK, ' if m.get('quick') else ''}median of {m.get('reps', '?')}", fontsize=7)


def cache(res, out):
    cfgs = list(res["configs"])
    wls = ["w3g", "r3g", "wrand", "rrand"]
    fig, axes = plt.subplots(1, 4, figsize=(14, 4))
    for ax, w in zip(axes, wls):
        vals = [res["configs"][c][w]["median_s"] or 0 for c in cfgs]
        ax.bar(range(len(cfgs)), vals, color=["#888" if c.startswith("raw") else "#3a7" if c == "ssdprio" else "#47b" for c in cfgs])
        ax.set_xticks(range(len(cfgs)))
        ax.set_xticklabels(cfgs, rotation=45, ha="right", fontsize=8)
        ax.set_title(w)
        ax.set_ylabel("seconds (median)")
    fig.suptitle("Cache workloads: time (lower is better)")
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    fig.savefig(os.path.join(out, "cache.png"), dpi=100)


def contention(res, out):
    cfgs = list(res["configs"])
    pats = sorted({p for c in cfgs for p in res["configs"][c]},
                  key=lambda p: ["seqread", "seqwrite", "randread", "randwrite"].index(p) if p in
                  ["seqread", "seqwrite", "randread", "randwrite"] else 9)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 4.5))
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
    a1.set_ylabel("normal throughput with idle / alone (%)")
    a2.set_ylabel("idle reader MB/s (median)")
    a1.legend(fontsize=7)
    fig.suptitle("Contention: normal job vs a concurrent ionice -c3 sequential reader")
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    fig.savefig(os.path.join(out, "contention.png"), dpi=100)


def timeline(res, out):
    cfgs = list(res["configs"])
    if not cfgs:
        return
    fig, axes = plt.subplots(len(cfgs), 1, figsize=(10, 3.2 * len(cfgs)), squeeze=False)
    for ax, c in zip(axes[:, 0], cfgs):
        r = res["configs"][c]["run"]
        for key, lab in (("normal_series", "normal"), ("idle_series", "idle (ionice -c3)")):
            pts = r[key]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=lab)
        n1 = r["normal_start"] + r["normal_seconds"]
        ax.axvline(n1, color="k", ls=":", lw=0.8)
        ax.axvspan(n1, n1 + r["batch_mode_delay_s"], color="#ddd", alpha=0.5, label="batch_mode_delay")
        ax.set_title(f"{c} (idle_dispatch_interval {r['idle_dispatch_interval_ms']} ms)")
        ax.set_ylabel("MB/s")
        ax.legend(fontsize=7)
    axes[-1, 0].set_xlabel("seconds")
    footer(fig, res)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(os.path.join(out, "timeline.png"), dpi=100)


PLOTTERS = {"cache": cache, "contention": contention, "timeline": timeline}

if __name__ == "__main__":
    out = sys.argv[2]
    for scen in sys.argv[3:]:
        res = load(out, scen)
        if res and scen in PLOTTERS and res.get("configs"):
            PLOTTERS[scen](res, out)
            print(f"plot: {out}/{scen}.png")
