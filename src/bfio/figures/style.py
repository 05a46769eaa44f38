"""Shared figure style: ONE palette and ONE registry of series, labelled axes
with units, titles that name the setting, honest intervals, PDF + PNG output.

**The registry** (:data:`SERIES`): every series a figure draws (a router, a
BF-IO variant, an admission rule, a predictor, a theory drift, a trace, ...)
is looked up by the name the tables and the config write (``fcfs``,
``sglang_total_tokens``, ``aging``, ``speculative_per_request``) in its family,
and gets its colour, marker, line style and readable label from there, and
nowhere else: a label is written once, here. :func:`glossary_markdown` renders
the registry's meanings; ``figures/README.md`` carries that glossary and the
figure test checks it is the registry's. :func:`router` resolves a table's row
key (``bfio_h40_aging200``, ``vllm_dp_r10``) to its series.

**The palette** (:data:`COLOURS`): Okabe and Ito's colour-blind-safe colours.
Every series also has its own marker (and BF-IO's variants a line style), so a
figure stays readable in grayscale. What is shown only for comparison (the
routers not named in a panel, a reference's interval) is grey (:data:`OTHERS`).

**A panel shows at most** :data:`MAX_SERIES` series (:func:`panel_series`
counts them; :func:`save` logs a panel with more): a figure with more splits
its panels or draws the rest as one grey band (:func:`others_band`).

**Intervals** (:func:`interval`): a 95% Student-t interval over seeds only with
at least :data:`MIN_SEEDS_FOR_CI` seeds, otherwise the spread (one standard
deviation over the seeds); a non-negative quantity's bar or band is clipped at
0, and :func:`interval_note` says which of these the figure draws.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
import re
import zlib

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.colors import to_rgba_array
from matplotlib.ticker import FuncFormatter, LogFormatter, NullFormatter
import numpy as np

# --------------------------------------------------------------------------- the palette

#: Okabe and Ito's colour-blind-safe palette (its yellow left out: a line in it
#: cannot be read on white), and the grey of what is drawn for comparison only.
COLOURS = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
           "purple": "#CC79A7", "sky": "#56B4E9", "black": "#000000", "grey": "#7F7F7F"}
#: The order in which ordinal series (levels of B, G, p, a discount, ...) take the colours.
ORDER = ["blue", "orange", "green", "vermillion", "purple", "sky", "black", "grey"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1)), (0, (1, 1)), (0, (5, 2, 1, 2))]
#: Bar hatches, in order of use (a bar chart's categories also differ by colour).
HATCHES = ["", "//", "..", "xx"]
#: Grey of the comparison-only elements: the "other routers" band, a reference's interval.
OTHERS = "0.72"
#: The most series one panel shows (issue 42); a figure with more splits its
#: panels or bands the rest (:func:`others_band`).
MAX_SERIES = 8


@dataclass(frozen=True)
class Series:
    """How one series looks and what it is called: ``colour`` a key of
    :data:`COLOURS`, ``label`` the legend text (``{H}``, ``{N}`` filled in by
    :meth:`with_label`), ``meaning`` its definition for the glossary."""

    label: str
    colour: str
    marker: str
    linestyle: object = "-"
    meaning: str = ""
    filled: bool = True

    def style(self, line: bool = True, marker: bool = True) -> dict:
        """matplotlib keywords (``color``, ``marker``, ``linestyle``, ``label``)."""
        st = {"color": COLOURS.get(self.colour, self.colour), "label": self.label}
        st["marker"] = self.marker if marker else "None"
        st["linestyle"] = self.linestyle if line else "none"
        if marker and not self.filled:
            st["markerfacecolor"] = "white"
        return st

    def with_label(self, label: str) -> "Series":
        return replace(self, label=label)


def _s(label, colour, marker, linestyle="-", meaning="", filled=True) -> Series:
    return Series(label, colour, marker, linestyle, meaning, filled)


#: The effective window's symbol (math text: ``H`` with subscript ``eff``).
HEFF = r"$H_{\mathrm{eff}}$"

#: Family -> name (as the tables and the config write it) -> :class:`Series`.
SERIES: dict[str, dict[str, Series]] = {
    "router": {
        "fcfs": _s("FCFS", "black", "s", "-", "first come, first served: a freed slot takes the oldest waiting "
                   "request (the paper's baseline)"),
        "jsq_tokens": _s("JSQ", "orange", "^", "-", "join the shortest queue: each request to the worker with the "
                         "least token load (the paper's JSQ)"),
        "jsq_requests": _s("JSQ (requests)", "orange", "v", "--", "join the shortest queue counted in active "
                           "requests"),
        "bfio": _s("BF-IO", "blue", "o", "-", "the paper's router, BF-IO, with lookahead H (the default, "
                   "discounted objective) routing from a central pool"),
        "random": _s("Random", "grey", "p", "-", "each request to a random worker"),
        "round_robin": _s("Round robin", "orange", ">", "--", "each request to the next worker in turn"),
        "power_of_two": _s("Power of two", "purple", "h", "--", "two random workers, the one with fewer tokens "
                           "wins"),
        "least_tokens": _s("Least tokens", "black", "<", "--", "each request at once to the worker with the "
                           "fewest resident plus queued tokens"),
        "vllm_dp": _s("vLLM DP", "vermillion", "D", "--", "vLLM's data-parallel balancer: lowest "
                      "4 x waiting + running requests"),
        "vllm_dp_rotating": _s("vLLM DP, rotating ties", "vermillion", "d", ":", "vLLM DP with ties taken in "
                               "turn (vLLM pull request 47420)"),
        "vllm_dp_kv": _s("vLLM DP, KV-usage score", "vermillion", "P", "-.", "vLLM DP scoring in-flight requests "
                         "and KV-cache usage (vLLM pull request 49204)"),
        "vllm_token_lb": _s("vLLM token LB", "purple", "P", "--", "vLLM's proposed token-level balancer: lowest "
                            "4 x waiting + running tokens (vLLM pull request 40795)"),
        "sglang_total_requests": _s("SGLang total requests", "sky", "*", "--", "SGLang's data-parallel "
                                    "controller, fewest running plus waiting requests"),
        "sglang_total_tokens": _s("SGLang total tokens", "green", "X", "--", "SGLang's data-parallel controller, "
                                  "fewest KV plus waiting tokens"),
        "sglang_prefix_match": _s("SGLang prefix match", "purple", "^", "--", "SGLang's proposed rule: a hash of "
                                  "the prompt's first 4k tokens picks the rank"),
        "atom_least_requests": _s("ATOM least requests", "sky", ">", "--", "ROCm ATOM's balancer: fewest "
                                  "in-flight requests, then prompt tokens"),
        "tpu_least_loaded": _s("tpu-inference least loaded", "green", "p", "--", "tpu-inference's scheduler: "
                               "the smallest resulting rank load, cached prefix tokens discounted"),
        "cache_first": _s("tpu-inference cache first", "orange", "D", "--", "tpu-inference's former scheduler: "
                          "the rank with the longest cached prefix, whatever its load"),
        "sgl_cache_aware": _s("sgl-router cache aware", "vermillion", "s", "--", "sgl-router's policy: the "
                              "longest approximate prefix match unless the loads are imbalanced"),
    },
    # BF-IO's variants (:func:`router` picks one from a row key; H and N filled in)
    "bfio": {
        "lookahead": _s("BF-IO (H={H})", "blue", "o", "-", "BF-IO with lookahead H, central pool"),
        "no_lookahead": _s("BF-IO (H=0)", "sky", "o", "-", "BF-IO without lookahead (H = 0): the current step "
                           "only"),
        "paper_literal": _s("BF-IO (H={H}, paper-literal)", "purple", "D", "--", "BF-IO with Eq. (IO) as "
                            "printed (no discount, new requests persist)"),
        "instant": _s("BF-IO (H={H}), instant", "blue", "h", "--", "BF-IO binding each request to a worker's "
                      "queue on arrival (instant dispatch)"),
        "prefix": _s("BF-IO, prefix-cache term", "blue", "8", "-", "BF-IO with its prefix-cache term "
                     "(prefill study)"),
    },
    "admission": {
        "free": _s("free", "blue", "o", "-", "BF-IO admits whatever its objective picks (no rule)"),
        "fifo": _s("FIFO", "orange", "s", "-", "the oldest waiting requests are admitted first"),
        "aging": _s("aging N", "green", "^", "-", "a request that waited N steps is admitted at once (points "
                    "along the line: N)"),
        "drain": _s("drain N", "vermillion", "D", "--", "a request that waited N steps reserves a worker, "
                    "which drains for it (points along the line: N)"),
    },
    "predictor": {
        "noisy": _s("uniform error", "blue", "o", "-", "decode length estimated as o x U[1-d, 1+d]; level: d"),
        "lognormal": _s("log-normal error", "orange", "s", "-", "o x exp(N(0, sigma^2)); level: sigma"),
        "bucket": _s("bucket classifier", "green", "^", "-", "the right length bucket with probability = "
                     "accuracy; level: 1 - accuracy"),
        "oracle": _s("oracle lengths", "black", "None", "-", "BF-IO told every decode length (the reference)"),
        "oracle_free": _s("oracle-free predictors", "grey", "None", "-", "range over BF-IO with the predictors "
                          "below, which see no decode length"),
        "empirical": _s("empirical survival", "grey", "None", "--", "survival of the decode lengths completed so "
                        "far in the run"),
        "geometric": _s("geometric law", "grey", "None", ":", "decode lengths Geometric(p), p fitted on the "
                        "completed requests"),
        "prompt_survival": _s("prompt-conditioned survival", "grey", "None", "-.", "survival of the completed "
                              "decode lengths in the request's prompt-length bucket"),
        "none": _s("no predictor", "grey", "None", (0, (1, 1)), "active requests never finish within the "
                   "window"),
    },
    "reading": {
        "posterior": _s("posterior remaining length", "black", "o", "-", "BF-IO's default: the remaining length "
                        "read from the estimate's error model"),
        "paper": _s("paper's $r = \\hat{o} - \\tau$", "black", "o", "--", "the paper's reading: estimate less the "
                    "tokens generated so far"),
    },
    "drift": {
        "zero": _s("zero drift (delta = 0)", "blue", "o", "-", "constant work per step (classic load balancing)"),
        "one": _s("unit drift (delta = 1, decode)", "orange", "s", "--", "every request grows by one token a step "
                  "(LLM decode, Theorem 2)"),
        "periodic": _s("periodic drift (0, 1, 2, 1)", "green", "^", "-.", "a bounded periodic increment"),
        "random": _s("random drift (U[0, 2])", "vermillion", "D", ":", "i.i.d. uniform increments, drawn once"),
        "speculative": _s("speculative, common (1-4)", "purple", "v", (0, (5, 1)), "every request accepts the "
                          "same 1-4 draft tokens a step (covered by Definition 3)"),
        "speculative_per_request": _s("speculative, per request (1-4)", "sky", "P", (0, (3, 1, 1, 1)),
                                      "each request draws its own 1-4 tokens a step (outside Definition 3: an "
                                      "extension)"),
    },
    "distribution": {
        "uniform": _s("uniform prefill", "blue", "o", "-", "prefill lengths uniform on 1..s_max"),
        "two_point": _s("two-point prefill", "orange", "s", "--", "prefill 1 or s_max, each with probability 1/2"),
        "longbench": _s("LongBench prefill", "green", "^", "-.", "LongBench v2 prompt lengths, clipped at the "
                        "99th percentile and scaled to s_max"),
        "burstgpt": _s("BurstGPT prefill", "vermillion", "D", ":", "BurstGPT prompt lengths, clipped and scaled "
                       "likewise"),
    },
    "trace": {
        "longbench": _s("LongBench v2", "blue", "o", "-", "the paper's Table 1 trace"),
        "burstgpt": _s("BurstGPT", "orange", "s", "-", "the paper's Table 2 trace"),
        "arxiv": _s("arXiv", "green", "^", "-", "arXiv summarization (the paper's repository)"),
        "azure_code": _s("Azure code", "vermillion", "D", "-", "Azure LLM inference 2023, code"),
        "azure_conv": _s("Azure conversation", "purple", "v", "-", "Azure LLM inference 2023, conversation"),
        "vidur_arxiv": _s("vidur arXiv", "sky", "P", "-", "vidur's arXiv summarization"),
        "sarathi_sharegpt": _s("ShareGPT 8k", "black", "X", "-", "sarathi-serve's ShareGPT, 8k filtered"),
        "sharegpt_10k": _s("ShareGPT 10k", "grey", "*", "-", "ShareGPT validation set, 10k requests"),
        "longbench_v1": _s("LongBench v1", "blue", "h", "--", "LongBench v1 with llama2-7b-chat-4k outputs"),
        "mooncake": _s("Mooncake", "orange", "p", "--", "Mooncake's FAST'25 trace with prefix-block hashes"),
    },
    # reference lines and bands
    "reference": {
        "others": _s("other routers (range)", "grey", "None", "-", "the range of the means of the routers a "
                     "panel does not name (listed in the figure's entry)"),
        "h_eff": _s(HEFF, "black", "None", (0, (4, 2, 1, 2)), "the default objective's effective window, "
                    "min(H, reach): offsets beyond it weigh less than the solver's cut-off "
                    "(bfio.solvers.objective.effective_horizon), so larger H solve the same program"),
        "seed": _s("seed {N}", "grey", "x", "none", "the reference seed's value (the paper's single run)"),
        "c2": _s("proof's constant c2 x rate", "black", "None", ":", "the lower bound with the proof's constant"),
        "c_fit": _s("slope-1 fit c x rate", "black", "None", "--", "IIR = c x rate fitted on every cell"),
    },
}


def series(family: str, name: str) -> Series:
    """The registry's series ``name`` of ``family``. A name the registry lacks
    (a plugin's policy, a user's trace) gets a colour and marker of its own
    (from a hash of the name, so the same everywhere) and its name with spaces
    for underscores as its label."""
    fam = SERIES[family]
    if name in fam:
        return fam[name]
    k = zlib.crc32(str(name).encode())
    return Series(str(name).replace("_", " "), ORDER[k % 6], MARKERS[(k // 6) % len(MARKERS)], "--",
                  "not in the registry: named by its key")


def label(family: str, name: str) -> str:
    """The registry's label of ``name`` (:func:`series`)."""
    return series(family, name).label


def trace_label(trace: str) -> str:
    return label("trace", trace)


def admission_text(rule: str) -> str:
    """``'aging:200'`` -> ``'aging 200'``, ``'fifo'`` -> ``'FIFO'`` (the registry's labels)."""
    mode, _, n = str(rule).partition(":")
    return series("admission", mode).label.replace("N", n) if n else series("admission", mode).label


def router(row: str, dispatch: str | None = None, policy: str | None = None, horizon=None,
           report_interval=0) -> Series:
    """The series of a table's row key: a registered router (``vllm_dp``), a BF-IO
    row (``bfio_h40``, ``bfio_h40_literal``, ``bfio_h40_aging200``), a variant row
    naming its ``policy`` (``vllm_dp_r10`` with ``report_interval`` 10,
    ``bfio_h40_instant`` with its ``horizon``). ``dispatch`` (``central`` /
    ``instant``) is added to the label only where it differs from what the
    router does by default (BF-IO and the paper's baselines: central; the
    production routers: instant)."""
    from bfio.run_keys import parse_admission_row, parse_bfio_row

    def h_of(h):
        return None if h is None or (isinstance(h, float) and np.isnan(h)) else int(h)

    adm = parse_admission_row(row)
    bf = parse_bfio_row(row)
    if adm:
        H, rule = adm
        s = SERIES["bfio"]["lookahead" if H else "no_lookahead"]
        a = series("admission", rule.partition(":")[0])
        s = replace(s, marker=a.marker, label=f"BF-IO (H={H}, {admission_text(rule)})")
    elif bf:
        H, objective = bf
        key = "paper_literal" if objective == "paper-literal" else ("lookahead" if H else "no_lookahead")
        s = SERIES["bfio"][key]
        s = s.with_label(s.label.format(H=H))
    elif policy == "bfio" or (row not in SERIES["router"] and str(row).startswith("bfio")):
        H = h_of(horizon)
        if H is None:  # a variant row without its stored horizon: its key's (``bfio_h40_instant``)
            m = re.match(r"bfio_h(\d+)", str(row))
            H = int(m.group(1)) if m else None
        s = SERIES["bfio"]["instant"] if dispatch == "instant" else SERIES["bfio"]["lookahead"]
        s = s.with_label(s.label.format(H=H if H is not None else "?"))
        dispatch = None if dispatch == "instant" else dispatch
    else:
        name = row if row in SERIES["router"] or not policy else policy
        s = series("router", name)
    k = 0 if report_interval is None or (isinstance(report_interval, float) and np.isnan(report_interval)) \
        else int(report_interval)
    text = s.label
    if k > 0:
        text += f", reports every {k} steps"
    central_by_default = row in ("fcfs", "jsq_tokens", "jsq_requests", "random") or bool(adm or bf)
    if dispatch == "instant" and central_by_default:
        text += ", instant"
    elif dispatch == "central" and not central_by_default:
        text += ", central pool"
    return s.with_label(text)


def row_or_label(name: str, i: int = 0) -> tuple[str, dict]:
    """``(label, style)`` of ``name``: a row key (``bfio_h40``, ``fcfs``) reads the
    registry (:func:`router`); other text is its own label, with the ``i``-th
    level's style (:func:`level_style`). ``style``: ``color``, ``marker``, ``linestyle``."""
    from bfio.run_keys import parse_admission_row, parse_bfio_row

    if name in SERIES["router"] or parse_bfio_row(name) or parse_admission_row(name):
        st = router(name).style()
        return st.pop("label"), st
    return name, level_style(i)


def level_style(i: int, line: bool = True) -> dict:
    """Colour, marker and line style of the ``i``-th level of an ordinal series
    (B, G, p, a discount): the palette in :data:`ORDER`."""
    st = {"color": COLOURS[ORDER[i % len(ORDER)]], "marker": MARKERS[i % len(MARKERS)]}
    st["linestyle"] = LINESTYLES[i % len(LINESTYLES)] if line else "none"
    return st


def plain_text(label: str) -> str:
    """A label's math text as plain text (for Markdown): ``$H_{\\mathrm{eff}}$`` -> ``H_eff``,
    ``$r = \\hat{o} - \\tau$`` -> ``r = o_hat - tau``."""
    def one(m):
        t = m.group(1)
        t = re.sub(r"\\mathrm\{([^}]*)\}", r"\1", t)
        t = re.sub(r"\\hat\{([^}]*)\}", r"\1_hat", t)
        t = re.sub(r"_\{([^}]*)\}", r"_\1", t)
        return t.replace("\\tau", "tau").replace("\\max", "max").replace("\\", "")
    return re.sub(r"\$([^$]*)\$", one, label)


def glossary_markdown() -> str:
    """The registry's series as Markdown: one table per family, label and
    meaning (``figures/README.md`` "Series names" carries it verbatim)."""
    titles = {"router": "Routers", "bfio": "BF-IO variants (H: the lookahead)",
              "admission": "BF-IO admission rules (starvation study)", "predictor": "Decode-length predictors",
              "reading": "How BF-IO reads a predicted length", "drift": "Theory: workload drifts (Theorem 3)",
              "distribution": "Theory: prefill-length laws", "trace": "Traces",
              "reference": "Reference lines and bands"}
    out = []
    for family, entries in SERIES.items():
        out += [f"**{titles[family]}**", "", "| label | meaning |", "|---|---|"]
        out += [f"| {plain_text(s.label).replace('{H}', 'H').replace('{N}', 'N')} | {s.meaning} |"
                for s in entries.values()]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


# --------------------------------------------------------------------------- titles that name the setting

def setting_title(trace=None, workers=None, requests=None, slots=None, seeds=None, extra: str = "",
                  seed=None) -> str:
    """``'LongBench v2, G = 32 workers, N = 3,000 requests, B = 72 slots, 2 seeds'``:
    the setting in words (the parts given; ``workers`` a number or a list of G;
    ``seed``: the one seed a single-run figure draws)."""
    parts = []
    if trace is not None and not (isinstance(trace, float) and np.isnan(trace)):
        parts.append(trace_label(str(trace)))
    if workers is not None:
        gs = sorted({int(g) for g in np.atleast_1d(workers)})
        parts.append(f"G = {gs[0]} workers" if len(gs) == 1 else f"G = {', '.join(map(str, gs))} workers")
    if requests is not None and np.isfinite(float(requests)):
        parts.append(f"N = {int(requests):,} requests")
    if slots is not None and np.isfinite(float(slots)):
        parts.append(f"B = {int(slots)} slots")
    if seeds is not None:
        parts.append(f"{int(seeds)} seed{'s' if int(seeds) != 1 else ''}")
    if seed is not None:
        parts.append(f"seed {int(seed)}")
    if extra:
        parts.append(extra)
    return ", ".join(parts)


def setting_of(frame, wrap: bool = False, **extra) -> str:
    """:func:`setting_title` of a summary frame (its ``trace``, ``workers``,
    ``requests``, ``slots`` and ``n_seeds`` columns, where present); ``wrap``:
    on two lines (trace and G, then N and B), for a panel's title."""
    def one(col):
        if col not in frame or not len(frame):
            return None
        vals = frame[col].dropna().unique()
        return vals[0] if len(vals) == 1 else None

    workers = sorted(frame["workers"].dropna().unique()) if "workers" in frame and len(frame) else None
    seeds = int(frame["n_seeds"].max()) if "n_seeds" in frame and len(frame) else None
    text = setting_title(one("trace"), workers, one("requests"), one("slots"), seeds, **extra)
    return text.replace(", N = ", ",\nN = ", 1) if wrap else text


# --------------------------------------------------------------------------- honest intervals

#: Fewer seeds than this: no Student-t interval (with 2 seeds its half width is
#: 12.7 standard errors, through 0 for any noisy metric); the spread instead.
MIN_SEEDS_FOR_CI = 5


def interval(frame, metric: str, factor: float = 1.0, nonneg: bool = True):
    """``(mean, yerr, kind)`` of ``<metric>_mean`` / ``_ci_lo`` / ``_ci_hi`` over the
    rows of ``frame``, divided by ``factor``: the 95% interval with at least
    :data:`MIN_SEEDS_FOR_CI` seeds (``n_seeds``), else one standard deviation
    over the seeds (read back from the t interval), none with one seed; for a
    non-negative quantity the lower end is clipped at 0. ``kind`` is a set of
    what was drawn (``'ci'``, ``'sd'``, ``'clipped'``) for :func:`interval_note`."""
    from bfio.student_t import t_quantile

    mean = frame[f"{metric}_mean"].to_numpy(dtype=float) / factor
    lo = frame[f"{metric}_ci_lo"].to_numpy(dtype=float) / factor
    hi = frame[f"{metric}_ci_hi"].to_numpy(dtype=float) / factor
    n = frame["n_seeds"].to_numpy(dtype=float) if "n_seeds" in frame else np.full(len(mean), np.inf)
    down, up = mean - lo, hi - mean
    kind = set()
    for i, k in enumerate(n):
        if not (np.isfinite(down[i]) and np.isfinite(up[i])) or k < 2:
            down[i] = up[i] = 0.0
        elif k < MIN_SEEDS_FOR_CI:
            sd = (hi[i] - lo[i]) / 2 * np.sqrt(k) / t_quantile(0.975, k - 1)
            down[i] = up[i] = sd
            kind.add("sd")
        else:
            kind.add("ci")
    if nonneg:
        over = down > np.maximum(mean, 0) + 1e-12 * np.abs(mean)
        if over.any():
            kind.add("clipped")
        down = np.minimum(down, np.maximum(mean, 0))
    return mean, np.vstack([down, up]), kind


def interval_note(kinds, seeds=None) -> str:
    """What the bars of a figure show, for its title: ``'bars: 95% CI'``,
    ``'bars: +-1 s.d. over seeds (fewer than 5 seeds: no t-interval)'``, and
    ``', clipped at 0'`` where a lower end was."""
    k = set().union(*kinds) if kinds and not isinstance(next(iter(kinds)), str) else set(kinds)
    parts = []
    if "ci" in k:
        parts.append("95% CI")
    if "sd" in k:
        parts.append(f"+-1 s.d. over seeds (fewer than {MIN_SEEDS_FOR_CI} seeds: no t-interval)")
    text = "bars: " + "; ".join(parts) if parts else "no interval (one seed)"
    return text + (", clipped at 0" if "clipped" in k else "")


def reach_of(discount: float) -> int:
    """How many offsets the objective with ``discount`` weighs at all (the fast
    solver's cut-off): :func:`bfio.solvers.objective.effective_horizon` of an
    unbounded H."""
    from bfio.solvers.objective import effective_horizon

    return effective_horizon(10**9, discount)


def heff_text(reach: int, horizon: int | None = None) -> str:
    """The one wording of the effective window: ``'H_eff = min(H, 13)'``, or with
    ``horizon`` ``'H_eff = min(H, 13) = 10'`` (``H_eff`` as math text, :data:`HEFF`)."""
    text = f"{HEFF} = min(H, {int(reach)})"
    return text if horizon is None else f"{text} = {min(int(horizon), int(reach))}"


# --------------------------------------------------------------------------- readable panels

#: A raw key in a label: an identifier with underscores (``bfio_h40_instant``,
#: ``mooncake_x0_5``) or a pull-request number (``#49204``). Math text is not read.
RAW_KEY = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|#\d+")


def raw_keys(text: str) -> list[str]:
    """The raw keys in ``text`` outside ``$...$`` math (:data:`RAW_KEY`)."""
    plain = re.sub(r"\$[^$]*\$", "", str(text))
    return [m.group(0) for m in RAW_KEY.finditer(plain)]


def others_band(ax, curves, factor: float = 1.0, **kw):
    """The grey band from the lowest to the highest of ``curves`` (``(x, y)``
    pairs, one per router a panel does not name, ``y`` divided by ``factor``) at
    each x: how the other routers spread, as one element (at a single x: a
    thick grey bar). Returns it, or ``None`` with no curve."""
    if not curves:
        return None
    xs = np.asarray(sorted(set(np.concatenate([np.asarray(f[0], dtype=float) for f in curves]))))
    vals = np.full((len(curves), len(xs)), np.nan)
    for i, (fx, fy) in enumerate(curves):
        pos = {float(a): j for j, a in enumerate(xs)}
        for a, b in zip(np.asarray(fx, dtype=float), np.asarray(fy, dtype=float)):
            vals[i, pos[float(a)]] = b / factor
    lo, hi = np.nanmin(vals, axis=0), np.nanmax(vals, axis=0)
    lab = kw.pop("label", f"{len(curves)} other routers: range of their means")
    if len(xs) == 1:  # one x: a bar of the range, not an area
        return ax.errorbar(xs, [(lo[0] + hi[0]) / 2], yerr=[[(hi[0] - lo[0]) / 2], [(hi[0] - lo[0]) / 2]],
                           color=OTHERS, linestyle="none", elinewidth=6, capsize=0, label=lab, zorder=1, **kw)
    return ax.fill_between(xs, lo, hi, color=OTHERS, alpha=0.55, linewidth=0, label=lab, zorder=1, **kw)


def _is_capline(line) -> bool:
    return str(line.get_linestyle()) in ("None", "none", "") and line.get_marker() in ("_", "|", 0, 1, 2, 3)


def panel_series(ax) -> list[str]:
    """What a reader must tell apart in panel ``ax``: one entry per legend label
    of its data artists (lines, error bars, bands, bars, points) and, for the
    unlabelled ones, one per colour that no labelled artist has (16 worker
    trajectories in one colour: one series; an error bar's caps: its line's).
    Issue 42: at most :data:`MAX_SERIES`."""
    labelled, unlabelled = {}, set()

    def colour_of(artist):
        for g in ("get_color", "get_facecolor", "get_edgecolor"):
            if hasattr(artist, g):
                try:
                    rgba = to_rgba_array(getattr(artist, g)())
                except (TypeError, ValueError):
                    continue
                if rgba.size:
                    return tuple(np.round(rgba[0, :3], 3))
        return None

    def add(artist, label=None):
        if not artist.get_visible():
            return
        label = artist.get_label() if label is None else label
        c = colour_of(artist)
        if label and not str(label).startswith("_"):
            labelled.setdefault(str(label), c)
        elif c is not None:
            unlabelled.add(c)

    in_container = set()
    for cont in ax.containers:
        kids = [a for a in cont.get_children() if a is not None]
        in_container.update(id(a) for a in kids)
        lab = cont.get_label()
        for a in kids:
            if isinstance(a, matplotlib.lines.Line2D) and _is_capline(a):
                continue
            add(a, lab if lab and not lab.startswith("_") else a.get_label())
    for line in ax.lines:
        if id(line) not in in_container and not _is_capline(line):
            add(line)
    for coll in ax.collections:
        if id(coll) not in in_container:
            add(coll)
    for patch in ax.patches:
        if id(patch) not in in_container:
            add(patch)
    colours = set(labelled.values())
    return list(labelled) + [f"unlabelled {c}" for c in sorted(unlabelled - colours)]


def crowded_panels(fig) -> list[str]:
    """Panels of ``fig`` with more than :data:`MAX_SERIES` series (:func:`panel_series`)."""
    out = []
    for i, ax in enumerate(fig.axes):
        if ax.get_visible():
            n = len(panel_series(ax))
            if n > MAX_SERIES:
                out.append(f"axes {i} ({ax.get_title()[:40]!r}): {n} series")
    return out


class PlainLogFormatter(LogFormatter):
    """Log-axis labels as plain numbers ("5", "20", "0.1"), not 5x10^0."""

    def _num_to_string(self, x, vmin, vmax):
        return f"{x:g}"


def plain_log_ticks(axis) -> None:
    """One tick format per log axis (an ``Axis``: ``ax.yaxis``): plain numbers on
    the major ticks and, when it spans less than two decades (few majors), on
    some minor ticks (matplotlib picks which); otherwise minor ticks stay
    unlabelled."""
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}"))  # every major tick, as placed
    lo, hi = axis.get_view_interval()
    if lo > 0 and hi / lo < 100:
        axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
    else:
        axis.set_minor_formatter(NullFormatter())


def apply_style() -> None:
    plt.rcParams.update({
        "figure.dpi": 100, "savefig.dpi": 150, "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9,
        "legend.fontsize": 8, "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False,
        "axes.spines.right": False, "axes.grid": True, "grid.color": "0.88", "grid.linewidth": 0.6,
        "lines.linewidth": 1.4, "lines.markersize": 4, "legend.frameon": False, "pdf.fonttype": 42,
        "axes.prop_cycle": matplotlib.cycler(color=[COLOURS[c] for c in ORDER]),
    })


def figure(nrows: int = 1, ncols: int = 1, width: float = 6.5, height: float = 3.0, **kw):
    apply_style()
    return plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False, **kw)


#: Metadata that would make two saves of the same figure differ: left out, so
#: the same data give byte-identical files (``python -m bfio.results_diff``).
REPRODUCIBLE_METADATA = {".pdf": {"CreationDate": None, "ModDate": None}, ".svg": {"Date": None}}


def save(fig, *paths, dpi: float | None = None) -> None:
    """Save ``fig`` to every path (format from the extension) and close it.
    No creation dates are written, so the files depend on the figure only.
    Overlapping text (:func:`text_overlaps`) and a panel with more than
    :data:`MAX_SERIES` series (:func:`crowded_panels`) are logged as warnings
    naming the files (``bfio.figures``; the pipeline's figure logs), never silently."""
    import logging

    log = logging.getLogger("bfio.figures")
    overlaps = text_overlaps(fig)
    if overlaps:
        log.warning("overlapping text in %s: %s", ", ".join(map(str, paths)), "; ".join(overlaps[:10]))
    crowded = crowded_panels(fig)
    if crowded:
        log.warning("more than %d series in a panel of %s: %s", MAX_SERIES, ", ".join(map(str, paths)),
                    "; ".join(crowded))
    for p in paths:
        Path(p).parent.mkdir(parents=True, exist_ok=True)
        kw = {"dpi": dpi} if dpi is not None else {}
        fig.savefig(p, bbox_inches="tight", metadata=REPRODUCIBLE_METADATA.get(Path(p).suffix.lower()), **kw)
    plt.close(fig)


def non_gray_artists(fig, tol: float = 1e-6, allowed=()) -> list[str]:
    """Descriptions of the drawn elements of ``fig`` (lines, markers, patches,
    collections, texts) whose colour is neither a gray level nor one of
    ``allowed`` (RGB tuples)."""
    def colours(x):
        if x is None or (isinstance(x, str) and x == "none"):
            return np.zeros((0, 4))
        try:
            return to_rgba_array(x)
        except (TypeError, ValueError):
            return np.zeros((0, 4))

    ok = np.array([np.asarray(c, dtype=float)[:3] for c in allowed]).reshape(-1, 3)
    bad = []
    for artist in fig.findobj():
        if not artist.get_visible():
            continue
        getters = [g for g in ("get_color", "get_facecolor", "get_edgecolor", "get_markerfacecolor",
                               "get_markeredgecolor") if hasattr(artist, g)]
        for g in getters:
            try:
                rgba = colours(getattr(artist, g)())
            except Exception:  # noqa: BLE001 - some artists raise for unset colours
                continue
            rgba = rgba[rgba[:, 3] > 0] if rgba.size else rgba
            if not rgba.size:
                continue
            coloured = np.ptp(rgba[:, :3], axis=1) > tol
            if ok.size:
                known = (np.abs(rgba[:, None, :3] - ok[None, :, :]).max(axis=2) < 1e-3).any(axis=1)
                coloured &= ~known
            if coloured.any():
                bad.append(f"{type(artist).__name__} {artist.get_label() if hasattr(artist, 'get_label') else ''} "
                           f"{g}")
    return bad


def off_palette_artists(fig) -> list[str]:
    """The drawn elements of ``fig`` coloured outside the one palette
    (:data:`COLOURS`; gray levels are the comparison-only elements): empty for a
    figure drawn from the registry (issue 42). Seaborn's bootstrap band and
    matplotlib's defaults would show here."""
    from matplotlib.colors import to_rgb

    return non_gray_artists(fig, allowed=[to_rgb(c) for c in COLOURS.values()])


#: Unit prefixes used to rescale axes: factor -> prefix.
_PREFIXES = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def scale_for(values, unit: str) -> tuple[float, str]:
    """A divisor and a prefixed unit label so the largest |value| is below 1000,
    e.g. ``(1e6, 'M tokens')`` for loads of ~3e7 tokens, ``(1e6, 'MJ')`` for energy;
    tokens past millions in words (``'billion tokens'``, never ``'G tokens'``)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    top = float(np.max(np.abs(v))) if v.size else 1.0
    for factor, prefix in _PREFIXES:
        if top >= factor:
            break
    else:
        factor, prefix = 1.0, ""
    if unit in ("J", "W"):
        return factor, f"{prefix}{unit}"
    if unit.startswith("tokens") or unit.startswith("tok"):
        # words past M: "G tokens" would read as the number of workers G
        word = {"G": "billion", "T": "trillion"}.get(prefix, prefix)
        return factor, (f"{word} {unit}" if word else unit).replace("  ", " ")
    return factor, (f"{prefix}{unit}" if not prefix else f"x{factor:.0e} {unit}")




def _texts(fig):
    """``(description, Text)`` of every visible, non-empty text a reader sees:
    tick labels (only the ticks drawn), axis labels, titles, legend entries and
    the figure's own texts."""
    out = []
    owner = -1

    def add(desc, t):
        if t is not None and t.get_visible() and t.get_text().strip():
            out.append((desc, t, owner))

    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        owner = i
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)) if ax.axison else ():
            try:
                ticks = axis._update_ticks()  # the ticks matplotlib draws (inside the view)
            except Exception:  # pragma: no cover - private API changed
                ticks = axis.get_major_ticks()
            for tick in ticks:
                for lab in (tick.label1, tick.label2):
                    add(f"axes {i} {name} tick '{lab.get_text()}'", lab)
            add(f"axes {i} {name} label", axis.label)
        for title in (ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)):
            add(f"axes {i} title", title)
        leg = ax.get_legend()
        if leg is not None:
            for t in leg.get_texts():
                add(f"axes {i} legend '{t.get_text()}'", t)
    owner = -1
    for leg in fig.legends:
        for t in leg.get_texts():
            add(f"legend '{t.get_text()}'", t)
    for t in fig.texts:
        if t is not getattr(fig, "_suptitle", None):
            add(f"figure text '{t.get_text()[:30]}'", t)
    if getattr(fig, "_suptitle", None) is not None:
        add("suptitle", fig._suptitle)
    return out


def text_overlaps(fig, tolerance_px: float = 1.0) -> list[str]:
    """Pairs of texts of ``fig`` whose drawn boxes overlap (more than
    ``tolerance_px`` pixels each way: tick labels running into each other or
    into an axis label, a legend over a title), and texts that run into another
    panel's plotting area (a y label over the panel to its left). Empty for a
    readable figure: the figure tests assert it for every figure, and
    :func:`save` logs it for every figure the pipeline draws."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = []
    for desc, t, owner in _texts(fig):
        bb = t.get_window_extent(renderer)
        if bb.width > 0 and bb.height > 0:
            boxes.append((desc, t.get_text(), owner, bb.x0 + tolerance_px, bb.y0 + tolerance_px,
                          bb.x1 - tolerance_px, bb.y1 - tolerance_px))
    bad = []
    for i in range(len(boxes)):
        d1, s1, _, a0, b0, a1, b1 = boxes[i]
        for j in range(i + 1, len(boxes)):
            d2, s2, _, c0, e0, c1, e1 = boxes[j]
            if s1 == s2 and abs(a0 - c0) < 1 and abs(b0 - e0) < 1:
                continue  # the same text drawn twice in one place (a twin axis): reads as one
            if a0 < c1 and c0 < a1 and b0 < e1 and e0 < b1:
                bad.append(f"{d1} overlaps {d2}")
    # a text over another panel's plotting area (twins share their area: not another panel)
    panels = [(k, ax.get_window_extent(renderer)) for k, ax in enumerate(fig.axes)
              if ax.get_visible() and ax.axison]
    for desc, _, owner, a0, b0, a1, b1 in boxes:
        own = fig.axes[owner].get_window_extent(renderer) if owner >= 0 else None
        for k, pb in panels:
            if k == owner or (own is not None and np.allclose(own.bounds, pb.bounds)):
                continue
            if a0 < pb.x1 and pb.x0 < a1 and b0 < pb.y1 and pb.y0 < b1:
                bad.append(f"{desc} runs into the plotting area of axes {k}")
    return bad


__all__ = ["COLOURS", "ORDER", "MARKERS", "LINESTYLES", "HATCHES", "OTHERS", "MAX_SERIES", "MIN_SEEDS_FOR_CI",
           "Series", "SERIES", "series", "label", "trace_label", "admission_text", "router", "level_style",
           "row_or_label", "plain_text", "glossary_markdown", "HEFF", "setting_title", "setting_of", "interval", "interval_note", "reach_of", "heff_text",
           "raw_keys", "others_band", "panel_series", "crowded_panels", "apply_style", "figure", "save", "scale_for",
           "non_gray_artists", "off_palette_artists", "text_overlaps", "plain_log_ticks"]
