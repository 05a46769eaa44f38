"""The one palette and the one registry of series every figure reads (issue 42;
the module docstring of :mod:`bfio.figures.style` says how figures use them).

**The registry** (:data:`SERIES`): every series a figure draws (a router, a
BF-IO variant, an admission rule, a predictor, a theory drift, a trace, ...)
is looked up by the name the tables and the config write in its family, and
gets its colour, marker, line style and readable label from here and nowhere
else. :func:`router` resolves a table's row key to its series;
:func:`glossary_markdown` renders the meanings ``figures/README.md`` carries.

**The palette** (:data:`COLOURS`): Okabe and Ito's colour-blind-safe colours;
what is drawn only for comparison is grey (:data:`OTHERS`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
import re
import zlib

import numpy as np

from bfio.policies.names import ROUTER_NAMES
from bfio.lookahead.run_keys import declared_spec, row_spec

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


def _r(name, colour, marker, linestyle="-") -> Series:
    """A built-in router's series: its label and meaning from :data:`bfio.policies.names.ROUTER_NAMES`."""
    name_ = ROUTER_NAMES[name]
    return Series(name_.label, colour, marker, linestyle, name_.meaning)


#: The effective window's symbol (math text: ``H`` with subscript ``eff``).
HEFF = r"$H_{\mathrm{eff}}$"

#: Built-in router -> (colour, marker, line style); its label and meaning are
#: :data:`bfio.policies.names.ROUTER_NAMES`'s.
_ROUTER_STYLES = {
    "fcfs": ("black", "s", "-"),
    "jsq_tokens": ("orange", "^", "-"),
    "jsq_requests": ("orange", "v", "--"),
    "bfio": ("blue", "o", "-"),
    "random": ("grey", "p", "-"),
    "round_robin": ("orange", ">", "--"),
    "power_of_two": ("purple", "h", "--"),
    "least_tokens": ("black", "<", "--"),
    "vllm_dp": ("vermillion", "D", "--"),
    "vllm_dp_rotating": ("vermillion", "d", ":"),
    "vllm_dp_kv": ("vermillion", "P", "-."),
    "vllm_token_lb": ("purple", "P", "--"),
    "sglang_total_requests": ("sky", "*", "--"),
    "sglang_total_tokens": ("green", "X", "--"),
    "sglang_prefix_match": ("purple", "^", "--"),
    "atom_least_requests": ("sky", ">", "--"),
    "tpu_least_loaded": ("green", "p", "--"),
    "cache_first": ("orange", "D", "--"),
    "sgl_cache_aware": ("vermillion", "s", "--"),
}

#: Family -> name (as the tables and the config write it) -> :class:`Series`.
SERIES: dict[str, dict[str, Series]] = {
    "router": {name: _r(name, *style) for name, style in _ROUTER_STYLES.items()},
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
           report_interval=0, predictor: str | None = None, completions: str | None = None) -> Series:
    """The series of a table's row key: a registered router (``vllm_dp``), a BF-IO
    row (``bfio_h40``, ``bfio_h40_literal``, ``bfio_h40_aging200``), a variant row
    naming its ``policy`` (``vllm_dp_r10`` with ``report_interval`` 10,
    ``bfio_h40_instant`` with its ``horizon``). ``dispatch`` (``central`` /
    ``instant``) is added to the label only where it differs from what the
    router does by default (BF-IO and the paper's baselines: central; the
    production routers: instant). ``predictor``: a BF-IO row's predictor when the
    study names one (an oracle-free row beside the oracle's): its label says so
    and its markers are hollow. ``completions``: ``streamed`` (a router that sees
    the output stream's completions between lagged reports, issue 44) is said in
    the label and drawn dotted."""
    def h_of(h):
        return None if h is None or (isinstance(h, float) and np.isnan(h)) else int(h)

    spec = row_spec(row)  # a BF-IO row key, looked up among the declared rows (bfio.lookahead.run_keys)
    adm = spec if spec is not None and spec.admission is not None else None
    bf = spec if spec is not None and spec.admission is None else None
    if adm:
        s = SERIES["bfio"]["lookahead" if adm.horizon else "no_lookahead"]
        a = series("admission", adm.admission.partition(":")[0])
        s = replace(s, marker=a.marker, label=f"BF-IO (H={adm.horizon}, {admission_text(adm.admission)})")
    elif bf:
        key = "paper_literal" if bf.objective == "paper-literal" else ("lookahead" if bf.horizon else "no_lookahead")
        s = SERIES["bfio"][key]
        s = s.with_label(s.label.format(H=bf.horizon))
    elif policy == "bfio" or (row not in SERIES["router"] and _declared_bfio(row)):
        H = h_of(horizon)
        if H is None:  # a variant row without its stored horizon: its declared spec's
            declared = declared_spec(str(row))
            H = declared.horizon if declared is not None and declared.policy == "bfio" else None
        s = SERIES["bfio"]["instant"] if dispatch == "instant" else SERIES["bfio"]["lookahead"]
        s = s.with_label(s.label.format(H=H if H is not None else "?"))
        dispatch = None if dispatch == "instant" else dispatch
    else:
        name = row if row in SERIES["router"] or not policy else policy
        s = series("router", name)
    k = 0 if report_interval is None or (isinstance(report_interval, float) and np.isnan(report_interval)) \
        else int(report_interval)
    text = s.label
    if predictor and (policy == "bfio" or adm or bf or _declared_bfio(row)):
        text += f", {series('predictor', predictor).label}"
        s = replace(s, filled=False)
    if k > 0:
        text += f", reports every {k} steps"
    if completions == "streamed":
        text += ", completions streamed"
        s = replace(s, linestyle=":")
    central_by_default = row in ("fcfs", "jsq_tokens", "jsq_requests", "random") or bool(adm or bf)
    if dispatch == "instant" and central_by_default:
        text += ", instant"
    elif dispatch == "central" and not central_by_default:
        text += ", central pool"
    return s.with_label(text)


def _declared_bfio(row) -> bool:
    """Whether ``row`` is a declared BF-IO row or variant (:func:`bfio.lookahead.run_keys.declared_spec`)."""
    spec = declared_spec(str(row))
    return spec is not None and spec.policy == "bfio"


def row_or_label(name: str, i: int = 0) -> tuple[str, dict]:
    """``(label, style)`` of ``name``: a row key (``bfio_h40``, ``fcfs``) reads the
    registry (:func:`router`); other text is its own label, with the ``i``-th
    level's style (:func:`level_style`). ``style``: ``color``, ``marker``, ``linestyle``."""
    if name in SERIES["router"] or row_spec(name) is not None:
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
