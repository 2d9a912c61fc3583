"""Inflection for the teaching grammar: English and French plurals, French adjective agreement and verb tables.

Only what the lexicon needs: the regular patterns, plus the irregular French verbs spelled out in full.
French persons are indexed 0..4: je, tu, il/elle, nous, ils (the grammar never produces "vous").
"""

from __future__ import annotations

ENDINGS_FUTURE = ("ai", "as", "a", "ons", "ont")

# Present (je, tu, il, nous, ils), future stem, past participle.
IRREGULAR_VERBS: dict[str, tuple[str, str, str]] = {
    "être": ("suis es est sommes sont", "ser", "été"),
    "avoir": ("ai as a avons ont", "aur", "eu"),
    "aller": ("vais vas va allons vont", "ir", "allé"),
    "faire": ("fais fais fait faisons font", "fer", "fait"),
    "prendre": ("prends prends prend prenons prennent", "prendr", "pris"),
    "voir": ("vois vois voit voyons voient", "verr", "vu"),
    "vouloir": ("veux veux veut voulons veulent", "voudr", "voulu"),
    "pouvoir": ("peux peux peut pouvons peuvent", "pourr", "pu"),
    "boire": ("bois bois boit buvons boivent", "boir", "bu"),
    "lire": ("lis lis lit lisons lisent", "lir", "lu"),
    "écrire": ("écris écris écrit écrivons écrivent", "écrir", "écrit"),
    "ouvrir": ("ouvre ouvres ouvre ouvrons ouvrent", "ouvrir", "ouvert"),
    "offrir": ("offre offres offre offrons offrent", "offrir", "offert"),
    "dormir": ("dors dors dort dormons dorment", "dormir", "dormi"),
    "courir": ("cours cours court courons courent", "courr", "couru"),
    "venir": ("viens viens vient venons viennent", "viendr", "venu"),
    "suivre": ("suis suis suit suivons suivent", "suivr", "suivi"),
    "conduire": ("conduis conduis conduit conduisons conduisent", "conduir", "conduit"),
    "rire": ("ris ris rit rions rient", "rir", "ri"),
    "sourire": ("souris souris sourit sourions sourient", "sourir", "souri"),
    "acheter": ("achète achètes achète achetons achètent", "achèter", "acheté"),
    "appeler": ("appelle appelles appelle appelons appellent", "appeller", "appelé"),
    "préférer": ("préfère préfères préfère préférons préfèrent", "préférer", "préféré"),
    "nettoyer": ("nettoie nettoies nettoie nettoyons nettoient", "nettoier", "nettoyé"),
    "envoyer": ("envoie envoies envoie envoyons envoient", "enverr", "envoyé"),
    "lever": ("lève lèves lève levons lèvent", "lèver", "levé"),
    "asseoir": ("assieds assieds assied asseyons asseyent", "assiér", "assis"),
    "pleuvoir": ("pleus pleus pleut pleuvons pleuvent", "pleuvr", "plu"),
}
ETRE_IMPERFECT = ("étais", "étais", "était", "étions", "étaient")

# Words starting with a mute h elide like vowels (l'homme); others with h do not (le hibou).
_H_MUET = ("homme", "hôpita", "hôtel", "histoire", "horloge", "herbe", "heure", "heureu", "habit", "habill", "hiver")
_FRENCH_VOWELS = set("aâàeéèêëiîïoôuûùœæ")
_NO_ELISION = {"onze"}  # "Est-ce que onze enfants", not "qu'onze"

_EN_AN = {"hour", "honest", "honour", "heir"}
_EN_A = {"one", "uniform", "university", "unicorn", "useful", "european", "user"}


def french_vowel_initial(word: str) -> bool:
    """Whether a French word takes the elided forms before it (l', j', n', qu', d', cet, mon, bel)."""
    w = word.lower()
    if not w or w in _NO_ELISION:
        return False
    if w == "y":  # n'y a, j'y vais
        return True
    return w[0] in _FRENCH_VOWELS or w.startswith(_H_MUET)


def english_an(word: str) -> bool:
    """Whether the English indefinite article before `word` is "an" (by sound, so "a uniform", "an hour")."""
    w = word.lower()
    if w in _EN_AN:
        return True
    return w[:1] in set("aeiou") and w not in _EN_A


def english_plural(noun: str) -> str:
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in set("aeiou"):
        return noun[:-1] + "ies"
    return noun + "s"


def french_plural(noun: str) -> str:
    if noun.endswith(("s", "x", "z")):
        return noun
    if noun.endswith(("eau", "au", "eu")):
        return noun + "x"
    if noun.endswith("al"):
        return noun[:-2] + "aux"
    return noun + "s"


def french_adjective_forms(spec: str) -> tuple[tuple[str, str, str, str], str | None]:
    """("m[,f[,mp[,fp]]][/alt]") -> ((m sg, f sg, m pl, f pl), masculine form before a vowel or None)."""
    spec, _, alt = spec.partition("/")
    given = spec.split(",")
    m = given[0]
    f = given[1] if len(given) > 1 else (m if m.endswith("e") else m + "e")
    mp = given[2] if len(given) > 2 else (m if m.endswith(("s", "x")) else m + ("x" if m.endswith("eau") else "s"))
    fp = given[3] if len(given) > 3 else f + "s"
    return (m, f, mp, fp), alt or None


def english_s3(base: str) -> str:
    if base == "have":
        return "has"
    if base.endswith(("s", "x", "z", "ch", "sh", "o")):
        return base + "es"
    if base.endswith("y") and base[-2] not in "aeiou":
        return base[:-1] + "ies"
    return base + "s"


def english_past(base: str) -> str:
    if base.endswith("e"):
        return base + "d"
    if base.endswith("y") and base[-2] not in "aeiou":
        return base[:-1] + "ied"
    return base + "ed"


def english_ing(base: str) -> str:
    if base.endswith("ie"):
        return base[:-2] + "ying"
    if base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
        return base[:-1] + "ing"
    return base + "ing"


def french_conjugation(infinitive: str) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """(present by person, future by person, past participle) of a French verb."""
    if infinitive in IRREGULAR_VERBS:
        present, future_stem, participle = IRREGULAR_VERBS[infinitive]
        forms = tuple(present.split())
    elif infinitive.endswith("er"):
        stem = infinitive[:-2]
        nous = stem + ("e" if stem.endswith("g") else "") + "ons"  # mangeons, nageons
        forms = (stem + "e", stem + "es", stem + "e", nous, stem + "ent")
        future_stem, participle = infinitive, stem + "é"
    elif infinitive.endswith("ir"):  # the finir pattern
        stem = infinitive[:-2]
        forms = (stem + "is", stem + "is", stem + "it", stem + "issons", stem + "issent")
        future_stem, participle = infinitive, stem + "i"
    elif infinitive.endswith("re"):  # the vendre pattern
        stem = infinitive[:-2]
        forms = (stem + "s", stem + "s", stem, stem + "ons", stem + "ent")
        future_stem, participle = infinitive[:-1], stem + "u"
    else:
        raise ValueError(f"no conjugation for {infinitive!r}")
    return forms, tuple(future_stem + e for e in ENDINGS_FUTURE), participle


def french_vous(nous: str, infinitive: str) -> str:
    """The "vous" present from the "nous" one (mangeons -> mangez, finissons -> finissez), with the irregulars."""
    irregular = {"être": "êtes", "faire": "faites", "dire": "dites"}
    if infinitive in irregular:
        return irregular[infinitive]
    stem = nous[:-3]
    return (stem[:-1] if stem.endswith("ge") else stem) + "ez"


def french_imperfect(nous: str, infinitive: str) -> tuple[str, ...]:
    """The imperfect by person (je, tu, il, nous, ils) from the "nous" present: avons -> avais, faisons -> faisait."""
    if infinitive == "être":
        return ETRE_IMPERFECT
    stem = nous[:-3]
    return tuple(stem + e for e in ("ais", "ais", "ait", "ions", "aient"))


def french_imperative(present: tuple[str, ...], vous: str, infinitive: str) -> tuple[str, str, str]:
    """(tu, nous, vous) imperative: the present without the tu "s" of -er verbs (mange, va, ouvre)."""
    irregular = {"être": ("sois", "soyons", "soyez"), "avoir": ("aie", "ayons", "ayez")}
    if infinitive in irregular:
        return irregular[infinitive]
    tu = present[1]
    if tu.endswith("es") or tu == "vas":
        tu = tu[:-1]
    return tu, present[3], vous
