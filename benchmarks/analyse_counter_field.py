"""What NVML's power fields are, measured against the energy counter, from a
counter_field_probe.py trace.

1. How often each reading changes.
2. The counter's own power over each of its ~100 ms steps (energy step / time between
   steps) against the instant field (186) and the 1 s average field (185) at lags:
   correlation and the residual per update. A field that were the counter's step
   average, delayed, would reach r ~ 1 at some lag.
   Also the average field against the counter's own energy over a trailing second: a
   match means it comes from the counter's accumulator, so it cannot check the counter.
3. Per decode window: the counter's energy (interpolated between its steps, as the
   product reads it) against the 10 Hz trapezoid of each field (the sampler's method),
   at 10 sampling phases; and the disagreement the residual of (2) predicts for a
   window of n reads if that residual is independent from one update to the next.

    python benchmarks/analyse_counter_field.py docs/validation/h200-counter-field/probe-7b.json.gz
"""

from __future__ import annotations

import gzip
import json
import sys

import numpy as np

from ecocompute.monitor.sampler import integrate_trapezoid

LAGS_S = np.round(np.arange(-0.2, 0.81, 0.02), 2)


def field_in_effect(times: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    return values[np.clip(np.searchsorted(times, at, side="right") - 1, 0, len(values) - 1)]


def sampled_j(times, watts, t0: float, t1: float, phase_s: float, shift_s: float) -> float:
    """The sampler's figure: reads at 10 Hz (first at t0 + phase), trapezoid over the
    window (shifted by shift_s for a trailing average)."""
    a, b = t0 + shift_s, t1 + shift_s
    reads = np.arange(a - 0.1 + phase_s, b + 0.1, 0.1)
    return integrate_trapezoid(reads.tolist(), field_in_effect(times, watts, reads).tolist(), a, b)


def main() -> None:
    with gzip.open(sys.argv[1], "rt") as fh:
        data = json.load(fh)
    cols = {name: i for i, name in enumerate(data["columns"])}
    polls = np.array(data["polls"], dtype=float)
    t = (polls[:, cols["t_before_s"]] + polls[:, cols["t_after_s"]]) / 2
    energy_mj = polls[:, cols["energy_mj"]]
    fields = {
        "instant (186)": polls[:, cols["instant_mw"]] / 1000.0,
        "average (185)": polls[:, cols["average_mw"]] / 1000.0,
    }
    print(
        f"{data['model']}: {len(t)} polls over {t[-1] - t[0]:.1f} s, "
        f"median poll interval {np.median(np.diff(t)) * 1000:.1f} ms"
    )
    for name, series in [("energy counter", energy_mj), *fields.items()]:
        changes = t[np.nonzero(np.diff(series))[0] + 1]
        print(f"  {name:15s} changes every {np.median(np.diff(changes)) * 1000:.1f} ms (median)")

    steps = np.nonzero(np.diff(energy_mj))[0] + 1
    step_t, step_mj = t[steps], energy_mj[steps]
    mid_t = (step_t[1:] + step_t[:-1]) / 2
    counter_w = np.diff(step_mj) / np.diff(step_t) / 1000.0
    print(
        f"\ncounter power per step: mean {counter_w.mean():.1f} W, sd {counter_w.std():.1f} W "
        f"over {len(counter_w)} steps"
    )
    residual_sd: dict[str, float] = {}
    best_lag_s: dict[str, float] = {}
    for name, series in fields.items():
        rows = []
        for lag in LAGS_S:
            value = field_in_effect(t, series, mid_t + lag)
            rows.append((np.corrcoef(value, counter_w)[0, 1], lag, value - counter_w))
        r, lag, res = max(rows, key=lambda row: row[0])
        lag1 = np.corrcoef(res[1:], res[:-1])[0, 1]
        residual_sd[name] = res.std()
        best_lag_s[name] = float(lag)
        at_zero = next(row[0] for row in rows if row[1] == 0)
        print(
            f"  {name}: r = {at_zero:.3f} at lag 0; best r = {r:.3f} at lag {lag * 1000:+.0f} ms, "
            f"residual sd {res.std():.1f} W, mean |residual| {np.abs(res).mean():.1f} W, "
            f"lag-1 autocorrelation {lag1:+.2f}"
        )

    # The average field against the counter's own energy over a trailing window ending
    # at the field's update: if they match, the field is derived from the counter's
    # accumulator and is no independent check of it.
    avg = fields["average (185)"]
    updates = np.nonzero(np.diff(avg))[0] + 1
    update_t, update_w = t[updates], avg[updates]
    fits = []
    for width_s in (0.5, 0.8, 0.9, 1.0, 1.1, 1.2):
        for lag_s in np.arange(0.0, 0.2, 0.02):
            end = update_t - lag_s
            ok = end - width_s > step_t[0]
            trailing_w = (
                (np.interp(end, step_t, step_mj) - np.interp(end - width_s, step_t, step_mj))
                / width_s
                / 1000.0
            )
            fits.append((np.std(update_w[ok] - trailing_w[ok]), width_s, lag_s))
    sd, width_s, lag_s = min(fits)
    instant_w = fields["instant (186)"]
    changes = np.nonzero(np.diff(instant_w))[0] + 1
    change_t, change_w = t[changes], instant_w[changes]
    k = np.searchsorted(change_t, update_t)
    ok = k >= 10
    mean10 = np.array([change_w[i - 10 : i].mean() for i in k[ok]])
    print(
        f"  average (185) vs the counter's own energy over the trailing {width_s:.1f} s "
        f"(lag {lag_s * 1000:.0f} ms): residual sd {sd:.2f} W; vs the mean of the last 10 "
        f"instant values: residual sd {np.std(update_w[ok] - mean10):.2f} W"
    )

    print(
        "\nper window: counter J; 10 Hz trapezoid vs counter, mean over 10 phases "
        "(min..max); predicted sd from the residual"
    )
    print(
        "  win fmt   s     counter J | instant (186)                  | average (185), "
        "shifted 0.5 s"
    )
    worst = {"instant": 0.0, "average": 0.0, "average unshifted": 0.0, "instant lagged": 0.0}
    for k, w in enumerate(data["windows"]):
        t0, t1 = w["t0"], w["t1"]
        counter_j = (np.interp(t1, step_t, step_mj) - np.interp(t0, step_t, step_mj)) / 1000.0
        n_reads = (t1 - t0) * 10
        line = f"  {k:3d} {w['precision']:4s} {t1 - t0:5.2f} {counter_j:9.1f}"
        for key, (name, shift) in {
            "instant": ("instant (186)", 0.0),
            "average": ("average (185)", 0.5),
        }.items():
            d = [
                (sampled_j(t, fields[name], t0, t1, p, shift) - counter_j) / counter_j * 100
                for p in np.arange(0, 0.1, 0.01)
            ]
            worst[key] = max(worst[key], max(abs(x) for x in d))
            predicted = residual_sd[name] / (counter_j / (t1 - t0)) / np.sqrt(n_reads) * 100
            line += f" | {np.mean(d):+.2f}% ({min(d):+.2f}..{max(d):+.2f}) sd {predicted:.2f}%"
        unshifted = [
            abs(sampled_j(t, fields["average (185)"], t0, t1, p, 0.0) - counter_j) / counter_j
            for p in np.arange(0, 0.1, 0.01)
        ]
        worst["average unshifted"] = max(worst["average unshifted"], max(unshifted) * 100)
        lagged = [
            abs(
                sampled_j(t, fields["instant (186)"], t0, t1, p, best_lag_s["instant (186)"])
                - counter_j
            )
            / counter_j
            for p in np.arange(0, 0.1, 0.01)
        ]
        worst["instant lagged"] = max(worst["instant lagged"], max(lagged) * 100)
        print(line)
    print(
        f"\nlargest |disagreement| at any phase: instant {worst['instant']:.2f}%, "
        f"average shifted 0.5 s {worst['average']:.2f}%, "
        f"average unshifted {worst['average unshifted']:.2f}%; instant shifted by its best "
        f"lag ({best_lag_s['instant (186)'] * 1000:+.0f} ms) {worst['instant lagged']:.2f}%"
    )


if __name__ == "__main__":
    main()
