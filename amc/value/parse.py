"""Robust parsing of numbers out of LLM answers for the zero-shot and FoA value baselines.

The reference parser (``\\d\\.\\d+``) lost signs, missed integers ("1", "0") and silently
returned 0.0 on junk. Here:

- ``<think>...</think>`` blocks are dropped; a Unicode minus counts as a sign.
- :func:`parse_value` prefers a number right after a keyword (score/value/answer/reward/
  estimate), else the first number in the text. Integers, decimals, signs and exponents are
  read; "70%" is 70 % of the way from low to high; "7/10" and "7 out of 10" are fractions of the
  range. The result is clipped to [low, high].
- :func:`parse_foa_score` reads "the correctness score is N" (else "N/10") and maps N in
  [0, 10] linearly onto [low, high].
- Both return ``None`` when the text holds no usable number; the caller then uses its
  documented fallback (the middle of the reward range unless configured).
"""

from __future__ import annotations

import math
import re

_NUM = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
_THINK = re.compile(r"<think>.*?(</think>|$)", re.S | re.I)
_FRACTION = re.compile(rf"(?<![\w.])({_NUM})\s*(?:/|out of)\s*(\d+(?:\.\d+)?)", re.I)
_KEYWORD = re.compile(
    rf"(?:score|value|answer|reward|estimate)\s*(?:is|of|=|:)?\s*(?:about|approximately|~)?\s*"
    rf"({_NUM})(\s*%)?", re.I)
_ANY = re.compile(rf"(?<![\w.])({_NUM})(\s*%)?")
_FOA = re.compile(rf"correctness\s+score\s+is\s*:?\s*({_NUM})", re.I)


def _clean(text: str) -> str:
    return _THINK.sub(" ", text or "").replace("\u2212", "-").replace("**", "")


def _clip(x: float, lo: float, hi: float) -> float | None:
    if not math.isfinite(x):
        return None
    return min(max(x, lo), hi)


def parse_value(text: str, lo: float = 0.0, hi: float = 1.0) -> float | None:
    """A value in [lo, hi] from an LLM's answer, or None when it holds no number."""
    t = _clean(text)
    m = _FRACTION.search(t)
    num_m = _KEYWORD.search(t) or _ANY.search(t)
    if m and (num_m is None or m.start() <= num_m.start()):
        den = float(m.group(2))
        if den > 0:
            return _clip(lo + (hi - lo) * float(m.group(1)) / den, lo, hi)
    if num_m is None:
        return None
    x = float(num_m.group(1))
    if num_m.group(2):  # a percentage of the range
        x = lo + (hi - lo) * x / 100.0
    return _clip(x, lo, hi)


def parse_foa_score(text: str, lo: float = 0.0, hi: float = 1.0) -> float | None:
    """``lo + (hi - lo) * N / 10`` for "the correctness score is N" (or "N/10"); else None."""
    t = _clean(text)
    m = _FOA.findall(t)
    if m:
        n = float(m[-1])  # the final verdict, if the model restated it
    else:
        f = [x for x in _FRACTION.findall(t) if float(x[1]) == 10]
        if not f:
            return None
        n = float(f[-1][0])
    if not math.isfinite(n):
        return None
    return lo + (hi - lo) * min(max(n, 0.0), 10.0) / 10.0
