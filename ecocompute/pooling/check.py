"""`ecocompute check`: grade one measured report against the published figures.

What is graded, and against what:
- FP16 energy per token against the site's FP16 anchor of the same size (within 5% in
  parameters), only when the anchor was measured on the report's own card (RTX 4090 for
  ada at 7B). Tolerance: k times the published run-to-run spread (CV < 2%, main dataset
  v1.1.0), one card's: it does not bound how far another card sits from it, so another
  card, of the same class or not, is not graded. Where the site's anchor is a mean over
  two cards (RTX 4090 + RTX 4090D for ada at 0.5-3B), whose own figures differ by up to
  ~12% from that mean, a report of a card with its own published figure there (the main
  dataset's RTX 4090D) is graded against that figure; any other card is not graded.
- The delta vs FP16 (NF4/INT8) as the published container's check_regression grades it
  (tools/check_regression.py): against the mean of the site's anchors measured at the
  report's size, where the site has any, else against the site's fitted curve of the
  report's own arch class (a fit through several sizes can miss one size by more than
  its band). Tolerance: k times the curve's residual spread as the site gives it
  (resid_std: the RMS of its anchors about the fit), else a project default
  (DEFAULT_SPREAD_PCT, not a published figure); the output names which. The figures
  come from the packaged copy of the site's curves.json, or from --curves FILE|URL.

Never graded: a derived report (it is the published figure itself: circular), an
illustrative one (it says it is not a measurement), one of another batch size or decode
regime than the published protocol's (batch 1, eager: unlike against like), any
comparison with a borrowed curve or borrowed anchors (Hopper has no published curve;
the Ampere one is only borrowed, so a Hopper report would be graded against another
architecture), and any comparison with this project's own figures (the Hopper anchors
and NF4 fit the no-GPU path ships are derived from this project's H200 reports, so
grading a measured report against them would compare that data with itself, as for a
derived report). The answer is a Checked: its grades and its verdict (within: every
graded comparison within tolerance; outside: one or more outside; not gradeable:
nothing graded, or the report refused); the command line chooses the exit status.
"""

from __future__ import annotations

import enum
import math
import os
import re
from dataclasses import dataclass

from ecocompute.boundary.user_paths import regular_file
from ecocompute.core.precision import Precision
from ecocompute.errors import InputError
from ecocompute.params.path_checks import refuse_credentials
from ecocompute.published.figures import (
    Anchors,
    DeltaCurve,
    curve_for,
    is_project_card,
    project_measurements,
    published,
)
from ecocompute.published.site_curves import (
    CurvesFile,
    borrowed_by_site,
    curves_from_text,
    site_anchor_figure,
    site_anchors,
)
from ecocompute.report.labels import card_with_arch
from ecocompute.results.collect import Invalid, Report, read_one

DEFAULT_K = 2.0
# A tolerance of more spreads than this grades nothing (k = 1e308 made it infinite):
# at 100, even the default 10 pp spread allows +-1000 pp, beyond any delta a report holds.
MAX_K = 100.0
ANCHOR_SIZE_TOLERANCE = 0.05  # relative: 1.1B matches an anchor at 1.1B +- 5%
# The spread used where the published data has no points to compute a curve's residuals
# from. A project default, not a published figure: wide enough for the card-to-card
# spread within one arch class, narrow enough to flag a sign flip of a large delta.
DEFAULT_SPREAD_PCT = 10.0


class Verdict(enum.Enum):
    WITHIN = "within"
    OUTSIDE = "outside"
    NOT_GRADEABLE = "not gradeable"


@dataclass(frozen=True)
class Grade:
    what: str
    within: bool | None  # None: not graded
    text: str


@dataclass(frozen=True)
class Spread:
    pct: float
    source: str


def curve_spread(curve: DeltaCurve) -> Spread:
    """The curve's residual spread (percentage points) and where it came from."""
    if curve.resid_std_pct is not None:
        return Spread(
            curve.resid_std_pct,
            f"the site's residual spread of its {curve.arch} {curve.precision} fit over "
            f"{curve.n_anchors} measured points (resid_std)",
        )
    return Spread(
        DEFAULT_SPREAD_PCT,
        f"project default {DEFAULT_SPREAD_PCT:g} pp: the published data gives no residual "
        f"spread for {curve.arch} {curve.precision}",
    )


def grade_anchor(r: Report, k: float, curves: CurvesFile | None = None) -> Grade:
    what = "FP16 anchor"
    size, fp16 = r.params_b, r.fp16_energy_per_token_mj
    anchors: Anchors | None = site_anchors(r.arch, curves)  # the class's own: never borrowed
    if anchors is None:
        borrowed = borrowed_by_site(r.arch, curves)
        own = project_measurements(r.arch)
        if own is not None:
            why = (
                f"the published dataset has no FP16 anchors for {r.arch}; the {r.arch} "
                f"anchors shipped are {own['label']}, derived from this project's own "
                "reports, so grading against them would be circular"
            )
        elif borrowed:
            why = (
                f"the published FP16 anchors for {r.arch} are {borrowed}'s, "
                "borrowed: a cross-architecture comparison is not a grade"
            )
        else:
            why = f"the published dataset has no FP16 anchors for arch class '{r.arch}'"
        return Grade(what, None, f"not graded: {why}")
    if size is None or fp16 is None:
        return Grade(what, None, "not graded: the report has no size or no FP16 energy")
    match = [
        (i, n, e)
        for i, (n, e) in enumerate(anchors.points)
        if abs(size - n) <= ANCHOR_SIZE_TOLERANCE * n
    ]
    if not match:
        sizes = ", ".join(f"{n:g}B" for n, _ in anchors.points)
        return Grade(
            what, None, f"not graded: no {r.arch} anchor within 5% of {size:g}B (anchors: {sizes})"
        )
    i, n_b, anchor = match[0]
    card = anchors.card_at(i)
    whose = f"the site's {card} anchor"
    one = _card_anchor(r.arch, n_b)
    if one is not None and _names_card(r.card, one[0]):  # the card's own figure: that one
        card, anchor = one
        whose = f"the main dataset's {card} anchor"
    elif " + " in card:
        apart = (
            "" if one is None else f" ({one[0]}'s own: {one[1]:,.1f}, {one[1] / anchor - 1:+.1%})"
        )
        return Grade(
            what,
            None,
            f"not graded: the site's {n_b:g}B anchor ({anchor:,.1f} mJ/token) is a mean over "
            f"{card}, not one card's measurement, so one card's run-to-run spread does not "
            f"bound how far a card sits from it{apart}; the published data holds no "
            f"{n_b:g}B figure of {r.card}'s own",
        )
    elif not _names_card(r.card, card):
        return Grade(
            what,
            None,
            f"not graded: another card: the site's {n_b:g}B anchor ({anchor:,.1f} mJ/token) "
            f"was measured on {card}, this report on {r.card}, and one card's run-to-run "
            "spread does not bound how far another card sits from it",
        )
    cv = float(published()["repeatability"]["cv_pct_max"])
    dev = 100.0 * (fp16 / anchor - 1.0)
    tol = k * cv
    within = abs(dev) <= tol
    return Grade(
        what,
        within,
        f"FP16 {fp16:,.1f} mJ/token vs {whose} "
        f"{anchor:,.1f} at {n_b:g}B: {dev:+.1f}%, tolerance +-{k:g} x {cv:g}% = +-{tol:.1f}% "
        f"(spread: published CV < {cv:g}%) -> {'within' if within else 'OUTSIDE'}",
    )


def _card_anchor(arch: str, params_b: float) -> tuple[str, float] | None:
    """One card's own FP16 figure from the main dataset at this size, where the site's
    anchor there is a mean over two cards (data/published_reference.json,
    card_fp16_anchors): (card, mJ/token), or None."""
    entry = published()["card_fp16_anchors"].get(arch)
    if entry is None:
        return None
    return next(
        ((entry["card"], float(e)) for n, e in entry["points"] if float(n) == params_b), None
    )


def _names_card(product: str, card: str) -> bool:
    """Whether an NVML product name is this card: the card's name as whole words in it
    ("RTX 4090" in "NVIDIA GeForce RTX 4090", "A800" in "NVIDIA A800-SXM4-80GB"), a
    model's one-letter suffix joined to its number first, so the RTX 4090 D
    ("NVIDIA GeForce RTX 4090 D") is not the RTX 4090, and is the RTX 4090D."""

    def joined(name: str) -> str:
        return re.sub(r"(\d) ([a-z])\b", r"\1\2", " ".join(name.lower().split()))

    return re.search(rf"\b{re.escape(joined(card))}\b", joined(product)) is not None


def grade_curve(r: Report, k: float, curves: CurvesFile | None = None) -> Grade:
    """The delta against the published figure at the report's size, as the published
    container's check_regression grades it: the mean of the site's anchors measured at
    that size where there are any (a fit through several sizes can miss one size by more
    than its band, and would fail a healthy run), else the fitted curve; tolerance k
    times the fit's residual spread either way."""
    what = f"{r.precision} curve"
    curve = curve_for(r.arch, r.precision, curves)
    if curve is None:
        return Grade(
            what,
            None,
            f"not graded: the published dataset has no {r.precision} curve for arch class "
            f"'{r.arch}'",
        )
    if curve.borrowed_from:
        mine = project_measurements(r.arch)
        return Grade(
            what,
            None,
            f"not graded: no published curve was measured on {r.arch}; {curve.arch}'s is only "
            "borrowed, so grading against it would not be a fair grade"
            + (
                f"; {mine['label']} are this project's own data, so grading against them "
                "would be circular"
                if mine is not None
                else ""
            ),
        )
    delta, size = r.delta_pct, r.params_b
    if delta is None or size is None:
        return Grade(what, None, "not graded: the report has no size or no delta vs FP16")
    spread = curve_spread(curve)
    tol = k * spread.pct
    measured_here = site_anchor_figure(r.arch, r.precision, size, curves)
    if measured_here is not None:
        what = f"{r.precision} anchors"
        expected = measured_here.mean_pct
        each = ", ".join(
            f"{pt.delta_pct:+.1f}% ({pt.gpu}, n={'?' if pt.n is None else pt.n})"
            for pt in measured_here.points
        )
        against = (
            f"the site's {curve.arch} anchors at {size:.4g}B ({each}), mean {expected:+.1f}% "
            f"(the curve says {curve.delta_pct(size):+.1f}%)"
        )
        where = ""
    else:
        expected = curve.delta_pct(size)
        against = (
            f"the site's {curve.arch} curve's {expected:+.1f}% at {size:.4g}B (no anchor "
            "at this size)"
        )
        lo, hi = curve.fitted_range_b
        where = "" if curve.covers(size) else f"; {size:g}B is outside the fitted {lo:g}-{hi:g}B"
    resid = delta - expected
    within = abs(resid) <= tol
    return Grade(
        what,
        within,
        f"{delta:+.1f}% vs {against}: residual {resid:+.1f} pp, tolerance +-{k:g} x "
        f"{spread.pct:.1f} pp = +-{tol:.1f} pp (spread: {spread.source}){where} -> "
        f"{'within' if within else 'OUTSIDE'}",
    )


@dataclass(frozen=True)
class Checked:
    """One report graded. refused: why it was not graded at all (derived, illustrative);
    else its grades, each within, outside or not graded."""

    report: Report
    k: float
    grades: tuple[Grade, ...] = ()
    refused: str | None = None
    curves_from: str | None = None  # a curves.json given with --curves (None: packaged)

    @property
    def verdict(self) -> Verdict:
        graded = [g for g in self.grades if g.within is not None]
        if self.refused is not None or not graded:
            return Verdict.NOT_GRADEABLE
        return Verdict.WITHIN if all(g.within for g in graded) else Verdict.OUTSIDE


def check(r: Report, k: float = DEFAULT_K, curves: CurvesFile | None = None) -> Checked:
    """Grade a report against the published figures (see the module's docstring);
    curves: another curves.json than the packaged copy (check --curves)."""
    if r.kind == "illustrative":
        why = "the report says it is illustrative, not a real measurement"
        return Checked(r, k, refused=f"{why} ({r.source}); there is nothing to grade")
    if not r.measured:
        return Checked(
            r,
            k,
            refused=f"the report is derived from {_whose(r)} ({r.source}), not measured; "
            "grading it against the published figures would compare them with themselves",
        )
    unlike = _unlike_the_published_protocol(r)
    if unlike is not None:
        return Checked(r, k, refused=unlike)
    grades = [grade_anchor(r, k, curves)]
    if r.quantized:
        grades.append(grade_curve(r, k, curves))
    return Checked(r, k, tuple(grades), curves_from=None if curves is None else curves.where)


def _whose(r: Report) -> str:
    """Whose figures a derived report's come from: this project's (Hopper) or published."""
    own = is_project_card(r.reference_card)
    return "this project's own measurements" if own else "the published dataset"


PUBLISHED_BATCH = 1  # the published protocol decodes one sequence at a time
PUBLISHED_REGIME = "eager"  # generate() with a dynamic cache
PUBLISHED_TOKENS = 256  # new tokens per run (published-reference.md: the protocol)


def _unlike_the_published_protocol(r: Report) -> str | None:
    """Why a measured report is not like the published figures, if it is not: they are
    of batch 1 in the eager regime, and the sign of the answer flips with the batch
    size (docs/DESIGN.md); a graphs or compiled decode, or another count of new tokens,
    measures another workload, as does a chosen prompt length; another library's format
    (INT8-torchao) or threshold another kernel path; and LLM.int8() on random weights
    lacks the outlier columns its cost follows."""
    if r.batch_size != PUBLISHED_BATCH:
        why = (
            f"the report is of batch {r.batch_size}, the published figures of batch "
            f"{PUBLISHED_BATCH} (the published protocol): the delta vs FP16 changes with the "
            "batch size"
        )
    elif r.max_new_tokens is not None and r.max_new_tokens != PUBLISHED_TOKENS:
        why = (
            f"the report generated {r.max_new_tokens} new tokens per run, the published "
            f"figures {PUBLISHED_TOKENS} (the published protocol): the energy per token "
            "changes with the length"
        )
    elif r.prompt_tokens is not None:
        why = (
            f"the report decoded after a {r.prompt_tokens}-token prompt (--prompt_tokens), "
            "the published figures after the protocol's short one: the energy per token "
            "changes with the prompt's length"
        )
    elif r.quantized and r.format_key and r.format_key != r.precision:
        why = (
            f"the report measured {r.format_key}, the published {r.precision} figures "
            "bitsandbytes' at its defaults (LLM.int8() at threshold 6 for INT8): another "
            "kernel path"
        )
    elif r.precision == Precision.INT8 and r.weights == "synthetic":
        why = (
            "the report measured LLM.int8() on synthetic (random) weights, the published "
            "figures on pretrained ones: its cost follows the weights' outlier columns, "
            "which random weights lack"
        )
    elif r.regime != PUBLISHED_REGIME:
        why = (
            f"the report measured the {r.regime} decode regime, the published figures the "
            f"{PUBLISHED_REGIME} one (generate(), the published protocol): the energy per "
            "token differs between regimes"
        )
    else:
        return None
    return why + ", so grading one against the other would compare unlike with unlike"


def render_check(checked: Checked, exit_status: int) -> str:
    """The grade as `ecocompute check` prints it, naming the exit status it ends with."""
    r, k = checked.report, checked.k
    size = "size unknown" if r.params_b is None else f"{r.params_b:.4g}B"
    card = card_with_arch(r.card, r.arch)
    head = f"  report:      {r.model} {size} {r.precision} on {card}, {r.basis}"
    if r.delta_pct is not None:
        ci = r.ci95_pct
        head += f", {r.delta_pct:+.1f}% vs FP16" + (
            f" (95% CI {ci[0]:+.1f} .. {ci[1]:+.1f}%)" if ci else ""
        )
    if r.from_published_container:
        head += (
            f"; written by the published container (format {r.format_name}): one run, "
            "n = 1, no interval"
        )
    lines = [f"ecocompute check: {r.path}", head]
    if checked.refused is not None:
        lines.append(f"  result:      REFUSED (exit {exit_status}): {checked.refused}")
        return "\n".join(lines)
    if checked.curves_from is not None:
        lines.append(f"  curves:      {checked.curves_from}")
    lines.extend(f"  {g.what + ':':<12} {g.text}" for g in checked.grades)
    verdict = checked.verdict
    if verdict is Verdict.NOT_GRADEABLE:
        lines.append(f"  result:      NOT GRADEABLE (exit {exit_status})")
    else:
        lines.append(f"  result:      {verdict.value.upper()} k = {k:g} (exit {exit_status})")
    return "\n".join(lines)


def check_file(
    path: str | os.PathLike[str], k: float = DEFAULT_K, curves: CurvesFile | None = None
) -> Checked | Invalid:
    """One report file graded, or why it is not a valid report."""
    one = read_one(path)
    return one if isinstance(one, Invalid) else check(one, k, curves)


MAX_CURVES_BYTES = 1024 * 1024  # the site's curves.json is a few KiB
CURVES_TIMEOUT_S = 10.0


def load_curves(source: str) -> CurvesFile:
    """--curves FILE|URL: a curves.json in the site's format, from a file or fetched
    (http(s), at most MAX_CURVES_BYTES, CURVES_TIMEOUT_S for the whole request). Raises
    InputError saying why it cannot be used."""
    from ecocompute.published.bounded_get import GetFailed, get_bounded

    if source.startswith(("http://", "https://")):
        refuse_credentials("curves", source)  # refused first: never echoed
        try:
            data = get_bounded(
                source,
                {"Accept": "application/json"},
                deadline_s=CURVES_TIMEOUT_S,
                max_bytes=MAX_CURVES_BYTES,
            )
        except GetFailed as exc:
            raise InputError("curves", source, f"could not be fetched ({exc.reason})") from None
    else:
        regular_file("curves", source, "a curves.json file or an http(s) URL")  # never a FIFO
        try:
            with open(source, "rb") as f:
                data = f.read(MAX_CURVES_BYTES + 1)
        except OSError as exc:
            raise InputError("curves", source, f"cannot be read ({exc.strerror})") from None
    if len(data) > MAX_CURVES_BYTES:  # both read at most one byte more, to tell
        raise InputError("curves", source, f"is larger than {MAX_CURVES_BYTES} bytes")
    try:
        return curves_from_text(data.decode("utf-8", errors="replace"), source)
    except ValueError as exc:
        raise InputError("curves", source, str(exc)) from None


def parse_k(text: str | None) -> float:
    """--k: a finite positive number (default DEFAULT_K). Raises InputError."""
    if text is None:
        return DEFAULT_K
    try:
        k = float(text)
    except ValueError:
        k = math.nan
    if not (math.isfinite(k) and k > 0):
        raise InputError("k", text, "must be a finite positive number, e.g. --k 2")
    if k > MAX_K:
        raise InputError(
            "k", text, f"must be at most {MAX_K:g}: a wider tolerance grades nothing, e.g. --k 2"
        )
    return k
