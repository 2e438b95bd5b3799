"""WebShop's purchase reward, as defined by the benchmark (princeton-nlp/WebShop, ``goal.py``).

When the agent clicks *Buy Now* on product p with chosen options o, for goal g::

    reward = r_type * (attribute matches + option matches + [price <= g.price_upper])
                    / (len(g.attributes) + len(g.goal_options) + 1)

in [0, 1], where

- an **attribute** of the goal matches when one of the product's annotated attributes has a
  fuzzy token-set ratio > 85 with it (``thefuzz.fuzz.token_set_ratio``), or, failing that, when
  it occurs verbatim in the product's lower-cased title, features (bullet points) or description;
- a **goal option** matches when one chosen option value has token-set ratio > 85 with it, both
  first passed through :func:`normalize_color` (the first colour word of the benchmark's
  colour vocabulary contained in the string). Synthetic goals store their options as a dict
  and the benchmark compares each ``(name, value)`` *pair* (its ``str`` form after thefuzz's
  processing, i.e. the tokens ``name value``); human goals store a list of strings. We keep both
  behaviours exactly;
- **r_type** in {0, 0.1, 0.5, 1} is the type factor: 1 when the product's search query equals
  the goal's, or >= 2 levels of the ``›``-separated category path are shared, or the fraction
  of the goal title's nouns that occur among the product title's nouns (``title_score``) is
  > 0.2; otherwise 0.5; then 0.1 if title_score < 0.1 and 0 if title_score == 0 (a goal title
  with no nouns scores 0.2).

Title nouns: the benchmark tags titles with spaCy (``en_core_web_sm`` upstream,
``en_core_web_lg`` in AgentGym) and keeps NOUN/PROPN tokens. spaCy and its models are not
installable from the package registries here, so the default ``noun_tagger="heuristic"`` keeps
the lower-cased alphabetic words of the title that are not function words (titles are mostly
noun phrases, so this over-counts adjectives a little and can lower title_score for
near-misses). ``noun_tagger="spacy:en_core_web_lg"`` uses spaCy exactly as AgentGym does when
spaCy and that model are installed. A product bought for its own goal always has title_score 1
under either tagger.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from thefuzz import fuzz

FUZZY_THRESHOLD = 85
"""Token-set ratio (0-100) above which two attribute or option strings count as a match."""

# The benchmark's colour vocabulary (normalize.py), in its order: normalize_color returns the
# FIRST entry that is a substring, so the order matters ("light blue" -> "blue").
def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


COLOR_SET: tuple[str, ...] = _words(
    """alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze
    brown burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate christmas
    coffee cognac copper coral cranberry cream crystal dark denim eggplant elephant espresso
    fuchsia gold granite grape graphite grass gray green grey heather indigo ivory ivy khaki
    lavender lemon leopard light lilac lime magenta maroon mauve merlot midnight mint mocha
    multicolor mushroom mustard natural navy nude olive orange peach pewter pink plum purple
    rainbow red rose royal rust sand sapphire seashell silver skull slate steel stone stonewash
    sunflower tan taupe teal tiger turquoise violet walnut wheat white wine yellow"""
)

_FUNCTION_WORDS = frozenset(_words(
    """a an the and or nor but of for to in on at by with without from into onto over under
    up down out off as per via vs than then so too very not no is are be was were it its this
    that these those he she they we you i me my our your their his her them us which who whom
    what when where why how all any both each few more most other some such only own same can
    will just don should now"""
))


def normalize_color(option: Any) -> Any:
    """The first colour of :data:`COLOR_SET` contained in ``option``, else ``option`` itself.

    ``option`` may be a ``(name, value)`` pair (synthetic goals): then ``in`` tests equality with
    the name or the value, as the benchmark does.
    """
    for color in COLOR_SET:
        if color in option:
            return color
    return option


def fuzzy_match(a: Any, b: Any) -> bool:
    """thefuzz token-set ratio of ``a`` and ``b`` (processed as the benchmark does) > 85."""
    return fuzz.token_set_ratio(a, b) > FUZZY_THRESHOLD


@dataclass(frozen=True)
class RewardInfo:
    """The reward and its parts (the benchmark's ``verbose`` info)."""

    reward: float
    """Total reward in [0, 1]."""
    r_type: float
    r_att: float
    r_option: float | None
    r_price: bool
    num_attr_matches: int
    num_option_matches: int
    query_match: bool
    category_match: bool
    title_score: float

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def heuristic_nouns(title: str) -> list[str]:
    """Lower-cased alphabetic words (2+ letters) of ``title`` that are not function words."""
    words = re.findall(r"[a-z]+", title.lower())
    return [w for w in words if len(w) > 1 and w not in _FUNCTION_WORDS]


@lru_cache(maxsize=4)
def _spacy_nouns(model: str) -> Callable[[str], list[str]]:
    try:
        import spacy  # optional: not a project dependency
    except ModuleNotFoundError:
        raise ValueError(f"noun_tagger 'spacy:{model}' needs spaCy and {model} installed") from None
    nlp = spacy.load(model)

    def nouns(title: str) -> list[str]:
        return [t.text.lower() for t in nlp(title) if t.pos_ in ("PNOUN", "NOUN", "PROPN")]

    return nouns


def noun_extractor(spec: str) -> Callable[[str], list[str]]:
    """``"heuristic"`` or ``"spacy:<model>"`` -> a function title -> list of noun tokens."""
    if spec == "heuristic":
        return heuristic_nouns
    if spec.startswith("spacy:"):
        return _spacy_nouns(spec.split(":", 1)[1])
    raise ValueError(f"noun_tagger must be 'heuristic' or 'spacy:<model>', got {spec!r}")


def type_reward(
    product: Mapping[str, Any], goal: Mapping[str, Any], nouns: Callable[[str], list[str]]
) -> tuple[float, bool, bool, float]:
    """(r_type, query_match, category_match, title_score) of buying ``product`` for ``goal``.

    Both mappings need ``query``, ``product_category`` and ``name`` (the title).
    """
    query_match = product["query"] == goal["query"]
    p_cat = {x.strip() for x in product["product_category"].split("›")}
    g_cat = {x.strip() for x in goal["product_category"].split("›")}
    category_match = len(p_cat & g_cat) >= 2
    p_nouns, g_nouns = nouns(product["name"]), nouns(goal["name"])
    title_score = 0.2 if not g_nouns else len(set(p_nouns) & set(g_nouns)) / len(g_nouns)
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return r_type, query_match, category_match, title_score


def attribute_matches(product: Mapping[str, Any], goal_attributes: Sequence[str]) -> int:
    """How many goal attributes the product has (annotated, or verbatim in its texts)."""
    texts = (
        product["Title"].lower(),
        " ".join(product["BulletPoints"]).lower(),
        product["Description"].lower(),
    )
    n = 0
    for g in goal_attributes:
        if any(fuzzy_match(p, g) for p in product["Attributes"]) or any(g in t for t in texts):
            n += 1
    return n


def option_matches(chosen: Sequence[str], goal_options: Mapping[str, str] | Sequence[str]) -> int:
    """How many goal options one of the chosen option values matches (see module doc)."""
    goal_items = (
        list(goal_options.items()) if isinstance(goal_options, Mapping) else list(goal_options)
    )
    p_norm = [normalize_color(o) for o in chosen]
    g_norm = [normalize_color(o) for o in goal_items]
    return sum(1 for g in g_norm if any(fuzzy_match(p, g) for p in p_norm))


def get_reward(
    product: Mapping[str, Any],
    goal: Mapping[str, Any],
    price: float,
    options: Mapping[str, str],
    nouns: Callable[[str], list[str]] = heuristic_nouns,
) -> RewardInfo:
    """The benchmark's reward for buying ``product`` at ``price`` with ``options`` chosen.

    ``product`` is a catalog record (``Title``, ``BulletPoints``, ``Description``,
    ``Attributes``, ``query``, ``product_category``, ``name``); ``goal`` a goal record
    (``attributes``, ``goal_options``, ``price_upper``, ``query``, ``product_category``, ``name``).
    """
    r_type, query_match, category_match, title_score = type_reward(product, goal, nouns)
    attrs, gopts = goal["attributes"], goal["goal_options"]
    r_price = price <= goal["price_upper"]
    n_att = attribute_matches(product, attrs)
    n_opt = option_matches(list(options.values()), gopts)
    total = (n_att + n_opt + int(r_price)) / (len(attrs) + len(gopts) + 1) * r_type
    return RewardInfo(
        reward=float(total),
        r_type=r_type,
        r_att=n_att / len(attrs) if attrs else 0.0,
        r_option=n_opt / len(gopts) if gopts else None,
        r_price=bool(r_price),
        num_attr_matches=n_att,
        num_option_matches=n_opt,
        query_match=query_match,
        category_match=category_match,
        title_score=title_score,
    )
